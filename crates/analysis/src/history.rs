//! A history of runs: the runs of each test (their label) in time order, with the figures a
//! reader follows from build to build, and the regression gate that judges the newest run of a
//! test against the runs before it.
//!
//! The gate is meant to run in CI on a busy machine, so a change is a regression only when three
//! tests agree (docs/reports.md): it is beyond the noise between the seconds of the runs (the
//! Welch's t of `crest compare`), beyond the spread between the baseline runs themselves, and
//! larger than a minimum relative change. Any one alone flags equal runs now and then.

use crate::analyze::Analysis;
use crate::bottleneck::Bottleneck;
use crate::compare::{per_second, verdict, Verdict};
use crate::figures::{Point, StepLoad, WorkUnit};
use crate::summary::Answer;
use crest_model::results::{EndReason, LoadKind, Provenance, Results};
use serde::Serialize;
use std::collections::BTreeMap;

/// The group of runs that carry no label.
pub const NO_LABEL: &str = "(no label)";

/// The default number of runs before the newest that make its baseline (`--baseline N`).
pub const DEFAULT_BASELINE: usize = 5;

/// The default smallest relative change the gate calls a regression, in percent.
pub const DEFAULT_MIN_CHANGE_PCT: f64 = 10.0;

/// The smallest rise of the error rate the gate calls a regression, in percentage points: a
/// relative change means nothing from an error rate of 0.
pub const MIN_ERROR_RATE_POINTS: f64 = 1.0;

/// Steady seconds with something in them, in the newest run and in its baseline together, below
/// which a figure gets no verdict (the rule of `crest compare`).
pub const MIN_SECONDS: usize = 3;

/// One run of a history, with the figures its table and charts show.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryRun {
    /// Where it came from (a run directory, a store's id).
    pub source: String,
    /// When sending started, RFC 3339 in UTC.
    pub started_at: String,
    /// The label, commit, branch and tags it carries, if any.
    pub provenance: Option<Provenance>,
    /// What its throughput counts.
    pub unit: WorkUnit,
    /// Successful units of work per second: its best step's, after warm-up.
    pub throughput: f64,
    /// Latency of every request, ms.
    pub p50_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// failures / requests, 0 to 1.
    pub error_rate: f64,
    /// The optimal operating point, when the run found one.
    pub optimum: Option<Answer>,
    /// The limit, when the run found one.
    pub limit: Option<Answer>,
    /// What limits the service, when the run can tell.
    pub bottleneck: Option<Bottleneck>,
    /// The run failed its own thresholds (or nothing succeeded): it is no baseline.
    pub failed: bool,
    /// Why it ended: a run interrupted by Ctrl-C or SIGTERM, or partial, is no baseline and
    /// gets no verdict.
    pub ended_by: EndReason,
    /// The loads of its steps, in order: the gate compares runs of the same loads only, as a
    /// run at 8 users is slower than one at 2 without anything having regressed.
    pub loads: Vec<StepLoad>,
    /// Per-second values of the steady state, for the gate's noise test.
    #[serde(skip)]
    seconds: BTreeMap<Figure, Vec<f64>>,
}

impl HistoryRun {
    /// A run's figures, from its results and their analysis.
    pub fn new(source: String, r: &Results, a: &Analysis) -> HistoryRun {
        let s = &a.summary;
        let throughput = a
            .unit_segments()
            .iter()
            .filter(|x| x.steady_requests > 0)
            .map(|x| x.success_rps)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
            .unwrap_or(s.success_rps);
        let seconds = Figure::ALL
            .iter()
            .map(|f| (*f, per_second(a, f.per_second())))
            .collect();
        HistoryRun {
            source,
            started_at: r.started_at.clone(),
            provenance: r.config.provenance.clone(),
            unit: a.unit,
            throughput,
            p50_ms: s.latency_ms.p50,
            p95_ms: s.latency_ms.p95,
            p99_ms: s.latency_ms.p99,
            error_rate: s.error_rate,
            optimum: s.answers.optimal.clone(),
            limit: s.answers.limit.clone(),
            bottleneck: s.bottleneck.clone(),
            failed: s.thresholds_failed() || s.successes == 0,
            ended_by: r.ended_by,
            // Every step the run reached, whether anything ended in it or not: a step where
            // nothing was answered is still a load the run put on its service.
            loads: a
                .segments
                .iter()
                .filter(|g| g.end_s > g.start_s)
                .map(|g| match g.load() {
                    // A run without steps holds the load it was given.
                    StepLoad::Named(k) => match (r.config.model, r.config.rate) {
                        (LoadKind::Open, Some(rate)) => StepLoad::Rate(rate),
                        (LoadKind::Closed, _) => StepLoad::Users(r.config.concurrency),
                        _ => StepLoad::Named(k),
                    },
                    l => l,
                })
                .collect(),
            seconds,
        }
    }

    /// Its label, or [`NO_LABEL`].
    pub fn label(&self) -> &str {
        self.provenance
            .as_ref()
            .and_then(|p| p.label.as_deref())
            .unwrap_or(NO_LABEL)
    }

    /// The value of one figure.
    pub fn value(&self, f: Figure) -> f64 {
        match f {
            Figure::Throughput => self.throughput,
            Figure::P50 => self.p50_ms,
            Figure::P95 => self.p95_ms,
            Figure::P99 => self.p99_ms,
            Figure::ErrorRate => self.error_rate,
        }
    }

    fn tagged(&self, key: &str, value: &str) -> bool {
        self.provenance
            .as_ref()
            .and_then(|p| p.tags.get(key))
            .is_some_and(|v| v == value)
    }
}

/// A figure the history follows and the gate judges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Figure {
    /// Successful units of work per second; lower is worse.
    Throughput,
    /// Median latency; higher is worse.
    P50,
    /// 95th percentile latency; higher is worse.
    P95,
    /// 99th percentile latency; higher is worse.
    P99,
    /// failures / requests; higher is worse.
    ErrorRate,
}

impl Figure {
    /// Every figure, in the order tables show them.
    pub const ALL: [Figure; 5] = [
        Figure::Throughput,
        Figure::P50,
        Figure::P95,
        Figure::P99,
        Figure::ErrorRate,
    ];

    /// The name tables and messages use.
    pub fn name(self) -> &'static str {
        match self {
            Figure::Throughput => "throughput",
            Figure::P50 => "p50",
            Figure::P95 => "p95",
            Figure::P99 => "p99",
            Figure::ErrorRate => "error_rate",
        }
    }

    /// Whether a higher value is better.
    pub fn higher_is_better(self) -> bool {
        self == Figure::Throughput
    }

    /// The per-second value the noise test reads. Throughput's seconds are counted in requests
    /// whatever the run's unit: the analysis keeps its per-second series in requests, which
    /// rise and fall with iterations and transactions.
    fn per_second(self) -> fn(&Point) -> f64 {
        match self {
            Figure::Throughput => |p| p.rps - p.errors_per_s,
            Figure::P50 => |p| p.p50_ms,
            Figure::P95 => |p| p.p95_ms,
            Figure::P99 => |p| p.p99_ms,
            Figure::ErrorRate => |p| if p.rps > 0.0 { p.errors_per_s / p.rps } else { 0.0 },
        }
    }
}

/// The runs of one label, oldest first.
#[derive(Clone, Debug, Serialize)]
pub struct Group {
    /// The label, or [`NO_LABEL`].
    pub label: String,
    /// Its runs, by `started_at`.
    pub runs: Vec<HistoryRun>,
}

/// A run that could not be read, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    /// Where it came from.
    pub source: String,
    /// Why it was left out.
    pub reason: String,
}

/// Every run found, grouped by label.
#[derive(Clone, Debug, Serialize)]
pub struct History {
    /// The groups, by label; runs with no label last.
    pub groups: Vec<Group>,
    /// What could not be read.
    pub skipped: Vec<Skipped>,
}

/// Groups already loaded runs by label, each group oldest first; `only` keeps one label. A run
/// whose analysis fails is skipped with the reason. Any source of runs (run directories, a
/// store) feeds this one function.
pub fn history(runs: Vec<(String, Results)>, only: Option<&str>, mut skipped: Vec<Skipped>) -> History {
    let mut groups: BTreeMap<(bool, String), Vec<HistoryRun>> = BTreeMap::new();
    for (source, r) in runs {
        let run = match crate::analyze(&r) {
            Ok(a) => HistoryRun::new(source, &r, &a),
            Err(e) => {
                skipped.push(Skipped {
                    source,
                    reason: format!("cannot analyse it: {e}"),
                });
                continue;
            }
        };
        if only.is_some_and(|l| l != run.label()) {
            continue;
        }
        let label = run.label().to_string();
        groups.entry((label == NO_LABEL, label)).or_default().push(run);
    }
    let groups = groups
        .into_iter()
        .map(|((_, label), mut runs)| {
            // RFC 3339 in UTC sorts as text; the source breaks ties so the order is stable.
            runs.sort_by(|a, b| (&a.started_at, &a.source).cmp(&(&b.started_at, &b.source)));
            Group { label, runs }
        })
        .collect();
    History { groups, skipped }
}

/// Which earlier runs the newest is judged against.
#[derive(Clone, Debug)]
pub struct GateOptions {
    /// The newest runs before it that did not fail their thresholds, at most this many.
    pub baseline: usize,
    /// Only runs carrying this tag (`--baseline-tag key=value`).
    pub baseline_tag: Option<(String, String)>,
    /// The smallest relative change called a regression, in percent.
    pub min_change_pct: f64,
}

impl Default for GateOptions {
    fn default() -> Self {
        GateOptions {
            baseline: DEFAULT_BASELINE,
            baseline_tag: None,
            min_change_pct: DEFAULT_MIN_CHANGE_PCT,
        }
    }
}

/// A figure of the newest run that got worse beyond every test of the gate.
#[derive(Clone, Debug, Serialize)]
pub struct Regression {
    /// The label of the test.
    pub label: String,
    /// Which figure.
    pub figure: Figure,
    /// What throughput counts, in the newest run and its baseline alike.
    pub unit: WorkUnit,
    /// The baseline runs' mean.
    pub from: f64,
    /// The newest run's value.
    pub to: f64,
    /// (to - from) / from in percent; for the error rate, the change in percentage points.
    pub change_pct: f64,
    /// Welch's t of the newest run's seconds against the baseline's; None when both were
    /// constant.
    pub t: Option<f64>,
    /// The newest run.
    pub run: String,
    /// The baseline runs.
    pub baseline: Vec<String>,
}

/// A figure of the newest run judged and found not to have regressed, with its figures, so a
/// CI page shows what passed and by how much.
#[derive(Clone, Debug, Serialize)]
pub struct Held {
    /// Which figure.
    pub figure: Figure,
    /// What throughput counts.
    pub unit: WorkUnit,
    /// The baseline runs' mean.
    pub from: f64,
    /// The newest run's value.
    pub to: f64,
    /// As [`Regression::change_pct`].
    pub change_pct: f64,
}

/// A figure the gate could not judge: fewer than 3 steady seconds in the newest run or its
/// baseline. No verdict, rather than a pass.
#[derive(Clone, Debug, Serialize)]
pub struct Unjudged {
    /// Which figure.
    pub figure: Figure,
    /// The newest run's steady seconds with something in them.
    pub seconds: usize,
    /// The baseline runs' together.
    pub baseline_seconds: usize,
}

/// The earlier runs of a label that could not be its newest run's baseline, by why (each counted
/// under the first that holds).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SetAside {
    /// Runs before the newest.
    pub earlier: usize,
    /// Failed their own thresholds, or nothing succeeded.
    pub failed: usize,
    /// Interrupted by Ctrl-C or SIGTERM, or partial (its last seconds or its collector lost).
    pub interrupted: usize,
    /// Counted another unit of work (requests against a flow's iterations).
    pub other_unit: usize,
    /// Ran other loads than the newest's.
    pub other_load: usize,
    /// Did not carry `--baseline-tag`.
    pub untagged: usize,
}

/// The gate's judgement of one label.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "snake_case", tag = "verdict")]
pub enum LabelVerdict {
    /// No run before the newest could be a baseline: no verdict on too little data.
    TooLittleData {
        /// The label.
        label: String,
        /// The newest run.
        run: String,
        /// The newest run's loads, which a baseline run must share.
        loads: Vec<StepLoad>,
        /// The earlier runs set aside, by why.
        set_aside: SetAside,
    },
    /// The newest run was interrupted or is partial (its last seconds or its collector lost):
    /// its figures are of a part of the test, no verdict.
    Interrupted {
        /// The label.
        label: String,
        /// The newest run.
        run: String,
        /// How it ended.
        ended_by: EndReason,
    },
    /// Judged: the regressions found, if any.
    Judged {
        /// The label.
        label: String,
        /// The newest run.
        run: String,
        /// The baseline runs.
        baseline: Vec<String>,
        /// Figures beyond every test; empty when none.
        regressions: Vec<Regression>,
        /// Figures judged that did not regress.
        held: Vec<Held>,
        /// Figures with too few seconds to judge.
        unjudged: Vec<Unjudged>,
    },
}

impl LabelVerdict {
    /// Whether any figure regressed.
    pub fn regressed(&self) -> bool {
        matches!(self, LabelVerdict::Judged { regressions, .. } if !regressions.is_empty())
    }
}

/// The gate over every group of a history: the newest run of each judged against the runs
/// before it.
pub fn check(h: &History, o: &GateOptions) -> Vec<LabelVerdict> {
    h.groups.iter().filter_map(|g| check_group(g, o)).collect()
}

/// The newest run of `g` against its baseline; None for an empty group.
pub fn check_group(g: &Group, o: &GateOptions) -> Option<LabelVerdict> {
    let (newest, before) = g.runs.split_last()?;
    if newest.ended_by.partial() {
        return Some(LabelVerdict::Interrupted {
            label: g.label.clone(),
            run: newest.source.clone(),
            ended_by: newest.ended_by,
        });
    }
    let mut set_aside = SetAside {
        earlier: before.len(),
        ..SetAside::default()
    };
    let mut baseline: Vec<&HistoryRun> = Vec::new();
    for r in before.iter().rev() {
        let count = if r.failed {
            &mut set_aside.failed
        } else if r.ended_by.partial() {
            &mut set_aside.interrupted
        } else if r.unit != newest.unit {
            &mut set_aside.other_unit
        } else if !same_loads(newest, r) {
            &mut set_aside.other_load
        } else if o.baseline_tag.as_ref().is_some_and(|(k, v)| !r.tagged(k, v)) {
            &mut set_aside.untagged
        } else {
            if baseline.len() < o.baseline {
                baseline.push(r);
            }
            continue;
        };
        *count += 1;
    }
    baseline.reverse();
    if baseline.is_empty() {
        return Some(LabelVerdict::TooLittleData {
            label: g.label.clone(),
            run: newest.source.clone(),
            loads: newest.loads.clone(),
            set_aside,
        });
    }
    let names: Vec<String> = baseline.iter().map(|r| r.source.clone()).collect();
    let (mut regressions, mut held, mut unjudged) = (Vec::new(), Vec::new(), Vec::new());
    for figure in Figure::ALL {
        match judge(figure, newest, &baseline, o.min_change_pct) {
            Judgement::Regressed {
                from,
                to,
                change_pct,
                t,
            } => regressions.push(Regression {
                label: g.label.clone(),
                figure,
                unit: newest.unit,
                from,
                to,
                change_pct,
                t,
                run: newest.source.clone(),
                baseline: names.clone(),
            }),
            Judgement::Held { from, to, change_pct } => held.push(Held {
                figure,
                unit: newest.unit,
                from,
                to,
                change_pct,
            }),
            Judgement::TooFewSeconds {
                seconds,
                baseline_seconds,
            } => unjudged.push(Unjudged {
                figure,
                seconds,
                baseline_seconds,
            }),
        }
    }
    Some(LabelVerdict::Judged {
        label: g.label.clone(),
        run: newest.source.clone(),
        baseline: names,
        regressions,
        held,
        unjudged,
    })
}

/// Whether `earlier` ran the loads of `newest`: the same steps, or, when a stop condition ended
/// the newest early, the steps it reached (a run stopped at its third step of five, for its
/// error rate, is judged against the runs that went on, whose best it did not reach).
fn same_loads(newest: &HistoryRun, earlier: &HistoryRun) -> bool {
    earlier.loads == newest.loads
        || (newest.ended_by == EndReason::Condition
            && !newest.loads.is_empty()
            && earlier.loads.starts_with(&newest.loads))
}

/// What the gate found of one figure.
enum Judgement {
    Regressed {
        from: f64,
        to: f64,
        change_pct: f64,
        t: Option<f64>,
    },
    Held {
        from: f64,
        to: f64,
        change_pct: f64,
    },
    TooFewSeconds {
        seconds: usize,
        baseline_seconds: usize,
    },
}

/// One figure of `new` against `baseline`: regressed when it got worse beyond all three tests;
/// no verdict, whatever the values, when either side has fewer than 3 steady seconds.
fn judge(f: Figure, new: &HistoryRun, baseline: &[&HistoryRun], min_change_pct: f64) -> Judgement {
    let base: Vec<f64> = baseline.iter().flat_map(|r| r.seconds[&f].iter().copied()).collect();
    let newest = &new.seconds[&f];
    if base.len() < MIN_SECONDS || newest.len() < MIN_SECONDS {
        return Judgement::TooFewSeconds {
            seconds: newest.len(),
            baseline_seconds: base.len(),
        };
    }
    let values: Vec<f64> = baseline.iter().map(|r| r.value(f)).collect();
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let (min, max) = values
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    let to = new.value(f);
    let change = if f == Figure::ErrorRate {
        (to - mean) * 100.0
    } else if mean > 0.0 {
        (to - mean) / mean * 100.0
    } else {
        0.0
    };
    let held = Judgement::Held {
        from: mean,
        to,
        change_pct: change,
    };
    // Worse, as a positive number in the figure's direction.
    let sign = if f.higher_is_better() { -1.0 } else { 1.0 };
    // 1. Beyond the spread between the baseline runs: past the worst of them by as much again
    // as they differ among themselves.
    let spread = max - min;
    let worst = if f.higher_is_better() { min } else { max };
    if sign * (to - worst) <= spread {
        return held;
    }
    // 2. Larger than the smallest change that matters.
    let floor = if f == Figure::ErrorRate {
        MIN_ERROR_RATE_POINTS
    } else {
        min_change_pct
    };
    if (f != Figure::ErrorRate && mean <= 0.0) || sign * change < floor {
        return held;
    }
    // 3. Beyond the noise between seconds, by the rule of `crest compare`, in the worse
    // direction.
    let t = match verdict(&base, newest) {
        Verdict::Beyond { t } => t,
        _ => return held,
    };
    if t.is_some_and(|t| sign * t <= 0.0) {
        return held;
    }
    Judgement::Regressed {
        from: mean,
        to,
        change_pct: change,
        t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run whose p50 is `p50` ms, its seconds spread around it by `jitter`.
    fn run(source: &str, p50: f64, jitter: f64) -> HistoryRun {
        let seconds: Vec<f64> = (0..6)
            .map(|k| p50 + if k % 2 == 0 { jitter } else { -jitter })
            .collect();
        HistoryRun {
            source: source.into(),
            started_at: format!("2026-01-01T00:00:0{}Z", source.len()),
            provenance: None,
            unit: WorkUnit::Requests,
            throughput: 100.0,
            p50_ms: p50,
            p95_ms: p50,
            p99_ms: p50,
            error_rate: 0.0,
            optimum: None,
            limit: None,
            bottleneck: None,
            failed: false,
            ended_by: EndReason::Duration,
            loads: vec![StepLoad::Users(2)],
            seconds: Figure::ALL
                .iter()
                .map(|f| {
                    let v = match f {
                        Figure::Throughput => vec![100.0; 6],
                        Figure::ErrorRate => vec![0.0; 6],
                        _ => seconds.clone(),
                    };
                    (*f, v)
                })
                .collect(),
        }
    }

    fn regressions(runs: Vec<HistoryRun>, o: &GateOptions) -> Vec<Figure> {
        let g = Group {
            label: "api".into(),
            runs,
        };
        match check_group(&g, o).unwrap() {
            LabelVerdict::Judged { regressions, .. } => regressions.iter().map(|r| r.figure).collect(),
            other => panic!("no verdict: {other:?}"),
        }
    }

    #[test]
    fn a_change_is_a_regression_only_beyond_noise_spread_and_the_minimum() {
        let o = GateOptions::default();
        let base = || vec![run("a", 100.0, 1.0), run("bb", 104.0, 1.0), run("ccc", 102.0, 1.0)];
        // Far slower: every latency figure.
        let mut runs = base();
        runs.push(run("dddd", 150.0, 1.0));
        assert_eq!(regressions(runs, &o), [Figure::P50, Figure::P95, Figure::P99]);
        // 15% slower but within the baseline's spread widened by itself (110 + 20): none.
        let mut runs = vec![run("a", 90.0, 1.0), run("bb", 110.0, 1.0), run("ccc", 100.0, 1.0)];
        runs.push(run("dddd", 115.0, 0.1));
        assert!(regressions(runs, &o).is_empty());
        // Beyond the spread but under the minimum change: none.
        let mut runs = vec![run("a", 100.0, 0.1), run("bb", 100.0, 0.1)];
        runs.push(run("ccc", 105.0, 0.1));
        assert!(regressions(runs, &o).is_empty());
        // Beyond spread and minimum but within the noise of its seconds: none.
        let mut runs = vec![run("a", 100.0, 1.0), run("bb", 100.0, 1.0)];
        runs.push(run("ccc", 120.0, 60.0));
        assert!(regressions(runs, &o).is_empty());
        // Faster is no regression.
        let mut runs = base();
        runs.push(run("dddd", 50.0, 1.0));
        assert!(regressions(runs, &o).is_empty());
    }

    #[test]
    fn failed_runs_are_no_baseline_and_none_left_is_too_little_data() {
        let mut failed = run("a", 100.0, 1.0);
        failed.failed = true;
        let g = Group {
            label: "api".into(),
            runs: vec![failed, run("bb", 300.0, 1.0)],
        };
        assert!(matches!(
            check_group(&g, &GateOptions::default()),
            Some(LabelVerdict::TooLittleData { .. })
        ));
    }

    /// A newest run that was interrupted, or too short to have 3 steady seconds, gets no
    /// verdict, whatever its figures: it passed the gate as "no regression" before. Runs of
    /// another load or unit, or interrupted, are no baseline, and the verdict counts them.
    #[test]
    fn no_verdict_on_a_short_or_interrupted_run_nor_against_another_load() {
        let o = GateOptions::default();
        let group = |newest: HistoryRun| Group {
            label: "api".into(),
            runs: vec![run("a", 100.0, 1.0), run("bb", 100.0, 1.0), newest],
        };
        let mut stopped = run("ccc", 300.0, 1.0);
        stopped.ended_by = EndReason::Sigint;
        assert!(matches!(
            check_group(&group(stopped), &o),
            Some(LabelVerdict::Interrupted {
                ended_by: EndReason::Sigint,
                ..
            })
        ));
        let mut short = run("ccc", 300.0, 1.0);
        for v in short.seconds.values_mut() {
            v.truncate(2);
        }
        let Some(LabelVerdict::Judged {
            regressions,
            held,
            unjudged,
            ..
        }) = check_group(&group(short), &o)
        else {
            panic!("not judged")
        };
        assert!(regressions.is_empty() && held.is_empty(), "{regressions:?} {held:?}");
        assert_eq!(unjudged.len(), 5);
        assert_eq!((unjudged[0].seconds, unjudged[0].baseline_seconds), (2, 12));
        // Heavier: 8 users against earlier runs at 2, one of them interrupted.
        let mut heavier = run("dddd", 300.0, 1.0);
        heavier.loads = vec![StepLoad::Users(8)];
        let mut cut = run("ccc", 100.0, 1.0);
        cut.ended_by = EndReason::Sigterm;
        let g = Group {
            label: "api".into(),
            runs: vec![run("a", 100.0, 1.0), run("bb", 100.0, 1.0), cut, heavier],
        };
        let Some(LabelVerdict::TooLittleData { set_aside, loads, .. }) = check_group(&g, &o) else {
            panic!("judged against another load")
        };
        assert_eq!(loads, [StepLoad::Users(8)]);
        assert_eq!(
            (set_aside.earlier, set_aside.other_load, set_aside.interrupted),
            (3, 2, 1)
        );
        // What held is said with its figures.
        let mut same = run("dddd", 101.0, 1.0);
        same.loads = vec![StepLoad::Users(2)];
        let Some(LabelVerdict::Judged { held, .. }) = check_group(&group(same), &o) else {
            panic!("not judged")
        };
        assert_eq!(held.len(), 5);
        assert!(
            (held[1].from - 100.0).abs() < 1e-9 && (held[1].change_pct - 1.0).abs() < 1e-9,
            "{held:?}"
        );
    }

    /// A newest run a stop condition ended at its second step of three is judged against the
    /// runs that went on (it passed as "too little data" when its shorter list of loads set them
    /// all aside); a run whose last seconds were lost is partial, as an interrupted one is.
    #[test]
    fn a_run_a_stop_condition_ended_early_is_judged_and_a_partial_one_is_not() {
        let o = GateOptions::default();
        let steps = |k: u64| (1..=k).map(|i| StepLoad::Users(2 * i)).collect::<Vec<_>>();
        let earlier = |name: &str| {
            let mut r = run(name, 100.0, 1.0);
            r.loads = steps(3);
            r
        };
        let mut stopped = run("dddd", 300.0, 1.0);
        stopped.loads = steps(2);
        stopped.ended_by = EndReason::Condition;
        let g = Group {
            label: "api".into(),
            runs: vec![earlier("a"), earlier("bb"), stopped.clone()],
        };
        let Some(LabelVerdict::Judged { regressions, .. }) = check_group(&g, &o) else {
            panic!("not judged: {:?}", check_group(&g, &o))
        };
        assert!(regressions.iter().any(|r| r.figure == Figure::P50), "{regressions:?}");
        // Ended by its duration with fewer steps, it ran another load.
        stopped.ended_by = EndReason::Duration;
        let g = Group {
            label: "api".into(),
            runs: vec![earlier("a"), earlier("bb"), stopped.clone()],
        };
        assert!(matches!(check_group(&g, &o), Some(LabelVerdict::TooLittleData { .. })));
        stopped.ended_by = EndReason::Unfinished;
        let g = Group {
            label: "api".into(),
            runs: vec![earlier("a"), earlier("bb"), stopped],
        };
        assert!(matches!(check_group(&g, &o), Some(LabelVerdict::Interrupted { .. })));
    }
}
