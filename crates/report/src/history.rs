//! A history of runs (`crest history`) as a terminal table, Markdown, JSON and an HTML page with
//! a chart per figure, and the regression gate's verdicts in words. Every cell is put in words
//! here, once, so the formats show the same figures.

use crate::chart::{chart, Chart};
use crate::fmt::{self, words};
use crest_analysis::figures::{StepLoad, WorkUnit};
use crest_analysis::history::{Figure, Held, History, HistoryRun, LabelVerdict, Regression, SetAside, Unjudged};
use crest_analysis::summary::Answer;
use minijinja::context;
use serde::Serialize;

/// The columns of a label's table.
const COLUMNS: [&str; 11] = [
    "date",
    "commit",
    "tags",
    "load",
    "throughput",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "errors",
    "optimum / limit",
    "bottleneck",
];

/// The cells of one run's row.
fn row(r: &HistoryRun) -> Vec<String> {
    let p = r.provenance.as_ref();
    let commit = p.and_then(|p| p.commit.as_deref()).map_or_else(
        || "-".to_string(),
        |c| {
            let short: String = c.chars().take(10).collect();
            if p.and_then(|p| p.dirty) == Some(true) {
                format!("{short}+dirty")
            } else {
                short
            }
        },
    );
    let tags = p
        .map(|p| {
            p.tags
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "-".into());
    let answer = |a: &Option<Answer>| {
        a.as_ref().map_or_else(
            || "-".to_string(),
            |a| {
                let at = match (a.users, a.rate) {
                    (Some(u), _) => format!("{u} users"),
                    (None, Some(r)) => format!("{}/s", fmt::num(r)),
                    _ => String::new(),
                };
                format!("{} @ {at}", fmt::num(a.per_s))
            },
        )
    };
    vec![
        r.started_at.get(..19).unwrap_or(&r.started_at).replace('T', " "),
        commit,
        tags,
        loads(&r.loads),
        format!("{} {}", fmt::num(r.throughput), words::unit_rate(r.unit)),
        fmt::ms(r.p50_ms),
        fmt::ms(r.p95_ms),
        fmt::ms(r.p99_ms),
        fmt::pct(r.error_rate) + if r.failed { " (failed)" } else { "" },
        format!("{} / {}", answer(&r.optimum), answer(&r.limit)),
        r.bottleneck
            .as_ref()
            .map_or_else(|| "-".to_string(), words::bottleneck_cell),
    ]
}

/// A run's loads in one cell: `2, 4, 8 users`, `100, 200/s`, or each step's own words when
/// they mix.
fn loads(l: &[StepLoad]) -> String {
    let users: Option<Vec<String>> = l
        .iter()
        .map(|x| match x {
            StepLoad::Users(u) => Some(fmt::int(*u)),
            _ => None,
        })
        .collect();
    let rates: Option<Vec<String>> = l
        .iter()
        .map(|x| match x {
            StepLoad::Rate(r) => Some(fmt::num(*r)),
            _ => None,
        })
        .collect();
    match (users, rates) {
        _ if l.is_empty() => "-".into(),
        (Some(u), _) if u.len() == 1 && u[0] == "1" => "1 user".into(),
        (Some(u), _) => format!("{} users", u.join(", ")),
        (_, Some(r)) => format!("{}/s", r.join(", ")),
        _ => l.iter().map(words::step).collect::<Vec<_>>().join(", "),
    }
}

fn skipped(h: &History) -> Vec<String> {
    h.skipped
        .iter()
        .map(|s| format!("{}: {}", s.source, s.reason))
        .collect()
}

/// The history as a terminal table per label, with the runs skipped.
pub fn terminal(h: &History) -> String {
    let mut out = String::new();
    if h.groups.is_empty() {
        out.push_str("no runs found\n");
    }
    for g in &h.groups {
        out.push_str(&format!("{} ({} runs)\n", g.label, g.runs.len()));
        let rows: Vec<Vec<String>> = g.runs.iter().map(row).collect();
        let widths: Vec<usize> = (0..COLUMNS.len())
            .map(|c| {
                rows.iter()
                    .map(|r| r[c].chars().count())
                    .chain([COLUMNS[c].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: Vec<&str>| {
            let padded: Vec<String> = cells
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}", w = *w))
                .collect();
            format!("  {}\n", padded.join("  ").trim_end())
        };
        out.push_str(&line(COLUMNS.to_vec()));
        for r in &rows {
            out.push_str(&line(r.iter().map(String::as_str).collect()));
        }
        out.push('\n');
    }
    for s in skipped(h) {
        out.push_str(&format!("skipped {s}\n"));
    }
    out
}

/// The history as Markdown: a table per label.
pub fn markdown(h: &History) -> String {
    let mut out = String::from("# crest history\n\n");
    for g in &h.groups {
        out.push_str(&format!("## {}\n\n", fmt::md_text(&g.label)));
        out.push_str(&format!("| {} |\n", COLUMNS.join(" | ")));
        out.push_str(&format!("|{}\n", "---|".repeat(COLUMNS.len())));
        for r in &g.runs {
            let cells: Vec<String> = row(r).iter().map(|c| fmt::md_text(c)).collect();
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        out.push('\n');
    }
    let skipped = skipped(h);
    if !skipped.is_empty() {
        out.push_str("## Skipped\n\n");
        for s in skipped {
            out.push_str(&format!("- {}\n", fmt::md_text(&s)));
        }
    }
    out
}

/// The history as JSON: the typed figures, and the gate's verdicts when it was asked.
pub fn json(h: &History, check: Option<&[LabelVerdict]>) -> serde_json::Result<String> {
    #[derive(Serialize)]
    struct Out<'a> {
        #[serde(flatten)]
        history: &'a History,
        #[serde(skip_serializing_if = "Option::is_none")]
        check: Option<&'a [LabelVerdict]>,
    }
    serde_json::to_string_pretty(&Out { history: h, check }).map(|j| j + "\n")
}

/// One chart per figure, a line per label over its runs.
fn charts(h: &History) -> Vec<Chart> {
    Figure::ALL
        .iter()
        .map(|f| {
            let series: Vec<(&str, Vec<(f64, f64)>)> = h
                .groups
                .iter()
                .map(|g| {
                    let pts = g
                        .runs
                        .iter()
                        .enumerate()
                        .map(|(i, r)| {
                            let v = r.value(*f);
                            ((i + 1) as f64, if *f == Figure::ErrorRate { v * 100.0 } else { v })
                        })
                        .collect();
                    (g.label.as_str(), pts)
                })
                .collect();
            let (title, y) = match f {
                Figure::Throughput => ("Throughput", "successful units/s"),
                Figure::P50 => ("p50 latency", "ms"),
                Figure::P95 => ("p95 latency", "ms"),
                Figure::P99 => ("p99 latency", "ms"),
                Figure::ErrorRate => ("Error rate", "%"),
            };
            chart(&format!("history-{}", f.name()), title, "run", y, &series, &[])
        })
        .collect()
}

/// The history as one self-contained HTML page (no script, no outside resource).
pub fn html(h: &History) -> Result<String, minijinja::Error> {
    #[derive(Serialize)]
    struct GroupView {
        label: String,
        rows: Vec<Vec<String>>,
    }
    let groups: Vec<GroupView> = h
        .groups
        .iter()
        .map(|g| GroupView {
            label: g.label.clone(),
            rows: g.runs.iter().map(row).collect(),
        })
        .collect();
    crate::view::templates()?
        .get_template("history.html.j2")?
        .render(context! {
            h => context! {
                columns => COLUMNS.to_vec(),
                groups => groups,
                skipped => skipped(h),
                charts => charts(h),
            }
        })
}

/// A figure's value with its unit: `370.1 req/s`, `10.6 ms`, `0.22%`.
fn value(f: Figure, unit: WorkUnit, v: f64) -> String {
    match f {
        Figure::Throughput => format!("{} {}", fmt::num(v), words::unit_rate(unit)),
        Figure::ErrorRate => fmt::pct(v),
        _ => format!("{} ms", fmt::ms(v)),
    }
}

/// A change: relative for throughput and latency, in points for the error rate.
fn change(f: Figure, pct: f64) -> String {
    if f == Figure::ErrorRate {
        format!("{pct:+.1} points")
    } else {
        format!("{pct:+.1}%")
    }
}

/// A figure that held, in words: `p50 10.6 ms against 10.5 ms (+1.0%)`.
fn held(h: &Held) -> String {
    format!(
        "{} {} against {} ({})",
        h.figure.name(),
        value(h.figure, h.unit, h.to),
        value(h.figure, h.unit, h.from),
        change(h.figure, h.change_pct)
    )
}

/// Figures with too few seconds to judge, in words.
fn unjudged(run: &str, u: &[Unjudged]) -> String {
    let names: Vec<&str> = u.iter().map(|x| x.figure.name()).collect();
    let (seconds, baseline) = u.first().map_or((0, 0), |x| (x.seconds, x.baseline_seconds));
    format!(
        "no verdict on {} of {run}: fewer than {} steady seconds (it has {seconds}, its baseline {baseline})",
        names.join(", "),
        crest_analysis::history::MIN_SECONDS
    )
}

/// Why no earlier run could be the baseline, in words.
fn no_baseline(run: &str, l: &[StepLoad], s: &SetAside) -> String {
    if s.earlier == 0 {
        return format!("no run before {run}: no verdict on too little data");
    }
    let mut why = Vec::new();
    for (n, what) in [
        (s.failed, "failed their thresholds or had no success".to_string()),
        (s.interrupted, "were interrupted or are partial".to_string()),
        (s.other_unit, "counted another unit of work".to_string()),
        (s.other_load, format!("ran other loads than its {}", loads(l))),
        (s.untagged, "lack --baseline-tag".to_string()),
    ] {
        if n > 0 {
            why.push(format!("{n} {what}"));
        }
    }
    format!(
        "no baseline run before {run}: of {} earlier, {}: no verdict on too little data",
        s.earlier,
        why.join(", ")
    )
}

/// A regression in words: the figure, its change, the new run and its baseline.
pub fn regression(r: &Regression) -> String {
    let value = |v: f64| value(r.figure, r.unit, v);
    let change = change(r.figure, r.change_pct);
    let t =
        r.t.map_or_else(|| "constant seconds".to_string(), |t| format!("t = {t:.1}"));
    format!(
        "{}: {} regressed from {} to {} ({change}, {t}) in {} against {}",
        r.label,
        r.figure.name(),
        value(r.from),
        value(r.to),
        r.run,
        r.baseline.join(", ")
    )
}

/// The gate's verdicts in words, a line per label (and per regression).
pub fn check(verdicts: &[LabelVerdict]) -> String {
    let mut out = String::new();
    if verdicts.is_empty() {
        out.push_str("check: no runs, no verdict on too little data\n");
    }
    for v in verdicts {
        match v {
            LabelVerdict::TooLittleData {
                label,
                run,
                loads,
                set_aside,
            } => out.push_str(&format!("check {label}: {}\n", no_baseline(run, loads, set_aside))),
            LabelVerdict::Interrupted { label, run, ended_by } => {
                out.push_str(&format!("check {label}: {}\n", interrupted(run, *ended_by)))
            }
            LabelVerdict::Judged {
                label,
                run,
                baseline,
                regressions,
                held,
                unjudged: u,
            } => {
                for r in regressions {
                    out.push_str(&format!("REGRESSION {}\n", regression(r)));
                }
                if regressions.is_empty() && !held.is_empty() {
                    out.push_str(&format!(
                        "check {label}: no regression in {run} against {} baseline run(s)\n",
                        baseline.len()
                    ));
                }
                if !u.is_empty() {
                    out.push_str(&format!("check {label}: {}\n", unjudged(run, u)));
                }
            }
        }
    }
    out
}

/// An interrupted or partial newest run, in words.
fn interrupted(run: &str, ended_by: crest_model::results::EndReason) -> String {
    format!(
        "{run} ended by {}: its figures are of part of the test, no verdict",
        words::ended_by(ended_by)
    )
}

/// The gate's verdicts as JUnit suites, one per label: a case per figure judged, failed when it
/// regressed (the message is the regression in words), and a skipped case for a label with no
/// baseline, so that a CI system shows "no verdict" rather than a pass.
pub fn check_suites(verdicts: &[LabelVerdict]) -> Vec<crate::junit::Suite> {
    use crate::junit::{Case, Suite};
    verdicts
        .iter()
        .map(|v| match v {
            LabelVerdict::TooLittleData {
                label,
                run,
                loads,
                set_aside,
            } => {
                let mut s = Suite::new(format!("crest history: {label}"));
                s.cases.push(Case::skip(
                    "regressions",
                    "the newest run against its baseline",
                    no_baseline(run, loads, set_aside),
                ));
                s
            }
            LabelVerdict::Interrupted { label, run, ended_by } => {
                let mut s = Suite::new(format!("crest history: {label}"));
                s.cases.push(Case::skip(
                    "regressions",
                    "the newest run against its baseline",
                    interrupted(run, *ended_by),
                ));
                s
            }
            LabelVerdict::Judged {
                label,
                run,
                baseline,
                regressions,
                held: h,
                unjudged: u,
            } => {
                let mut s = Suite::new(format!("crest history: {label}"));
                s.properties = vec![
                    ("crest.run".to_string(), run.clone()),
                    ("crest.baseline".to_string(), baseline.join(", ")),
                ];
                for f in Figure::ALL {
                    let case = if let Some(r) = regressions.iter().find(|r| r.figure == f) {
                        Case::fail("regressions", f.name(), regression(r))
                    } else if let Some(x) = h.iter().find(|x| x.figure == f) {
                        Case::pass("regressions", f.name()).with_output(format!(
                            "{} of {run} did not regress against {} baseline run(s): {}",
                            f.name(),
                            baseline.len(),
                            held(x)
                        ))
                    } else {
                        let x: Vec<Unjudged> = u.iter().filter(|x| x.figure == f).cloned().collect();
                        Case::skip("regressions", f.name(), unjudged(run, &x))
                    };
                    s.cases.push(case);
                }
                s
            }
        })
        .collect()
}

/// The gate's verdicts as Markdown for a CI job's summary page: a heading, then a line per
/// label and per regression, worded as [`check`] words them.
pub fn check_markdown(verdicts: &[LabelVerdict]) -> String {
    let regressed = verdicts.iter().any(LabelVerdict::regressed);
    let judged = verdicts
        .iter()
        .any(|v| matches!(v, LabelVerdict::Judged { held, .. } if !held.is_empty()));
    let mut out = format!(
        "### crest history --check\n\n{}\n\n",
        if regressed {
            "❌ a figure regressed beyond the noise"
        } else if judged {
            "✅ no regression beyond the noise"
        } else {
            "➖ no verdict on too little data"
        }
    );
    for line in check(verdicts).lines() {
        out.push_str(&format!("- {}\n", line.replace('|', "\\|")));
    }
    out.push('\n');
    out
}
