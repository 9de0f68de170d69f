//! `crest sweep`: one run of a scenario per point, each point setting one or more parameters
//! (`--param threads=1,5,25`, or `--points 'threads=5,loops=5' 'threads=5,loops=10'`) that the
//! scenario reads as `${env:NAME}`, anywhere including `load:`, with a setup command before
//! each point (load 11k, 22k, 60k ... entities and restart the database, say), timed: its
//! duration and exit code are the point's cost, kept on the point's segment.
//!
//! Each point is a whole run with its own directory (`point-001/`, ...); the sweep's directory
//! holds the study across them (`study.md`, `.html`, `.json`) and, for the reports that read
//! steps, all points joined as the steps of one run (`results.json`).

use crate::cli::SweepArgs;
use crate::measure::Readers;
use crate::parts::Parts;
use crate::{output, plan, rundir};
use anyhow::{bail, Context, Result};
use crest_model::results::{EndReason, Results, RunConfig, Segment, SetupRecord};
use crest_model::step::StepKind;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// The parameters and each point's values, in the order run.
#[derive(Debug, Serialize, Deserialize)]
pub struct Points {
    pub params: Vec<String>,
    pub points: Vec<Vec<String>>,
}

impl Points {
    fn label(&self, k: usize) -> String {
        self.params
            .iter()
            .zip(&self.points[k])
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn name_ok(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The points the flags ask for; errors name the flag.
fn points(a: &SweepArgs) -> Result<Points> {
    if let Some(param) = &a.param {
        let Some((name, values)) = param.split_once('=') else {
            bail!("--param {param:?}: write NAME=V1,V2,...");
        };
        let name = name.trim();
        if !name_ok(name) {
            bail!("--param: {name:?} is not a usable name (letters, digits, _)");
        }
        let values: Vec<Vec<String>> = values
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| vec![v.to_string()])
            .collect();
        if values.is_empty() {
            bail!("--param {name}: give at least one value");
        }
        return Ok(Points {
            params: vec![name.to_string()],
            points: values,
        });
    }
    let mut params: Vec<String> = Vec::new();
    let mut parsed: Vec<Vec<(String, String)>> = Vec::new();
    for (k, spec) in a.points.iter().enumerate() {
        let mut point = Vec::new();
        for pair in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((n, v)) = pair.split_once('=') else {
                bail!("--points, point {} ({spec:?}): {pair:?} is not NAME=VALUE", k + 1);
            };
            let (n, v) = (n.trim(), v.trim());
            if !name_ok(n) {
                bail!(
                    "--points, point {} ({spec:?}): {n:?} is not a usable name (letters, digits, _)",
                    k + 1
                );
            }
            if point.iter().any(|(m, _): &(String, String)| m == n) {
                bail!("--points, point {} ({spec:?}): {n} is set twice", k + 1);
            }
            if !params.iter().any(|p| p == n) {
                params.push(n.to_string());
            }
            point.push((n.to_string(), v.to_string()));
        }
        if point.is_empty() {
            bail!("--points, point {}: give NAME=VALUE,...", k + 1);
        }
        parsed.push(point);
    }
    if parsed.is_empty() {
        bail!("--points: give at least one point");
    }
    let mut points = Vec::new();
    for (k, point) in parsed.iter().enumerate() {
        let mut values = Vec::new();
        for p in &params {
            match point.iter().find(|(n, _)| n == p) {
                Some((_, v)) => values.push(v.clone()),
                None => bail!(
                    "--points, point {} ({:?}): sets no {p}; every point must set the same parameters",
                    k + 1,
                    a.points[k]
                ),
            }
        }
        points.push(values);
    }
    Ok(Points { params, points })
}

/// Runs the sweep. Returns the exit code.
pub fn command(a: &SweepArgs, command_line: &[String], readers: &Readers) -> Result<u8> {
    output::check_before(&a.output)?;
    let p = points(a)?;
    let text = crest_model::input::read_text_file(&a.scenario, crest_model::input::MAX_SCENARIO)
        .with_context(|| format!("{}: cannot read it", a.scenario.display()))?;
    let file = a.scenario.display().to_string();
    let dir_of = a.scenario.parent().unwrap_or(std::path::Path::new("."));
    // Every point must be valid before the first setup command runs.
    let mut scenarios = Vec::new();
    for (k, values) in p.points.iter().enumerate() {
        let env = |n: &str| match p.params.iter().position(|x| x == n) {
            Some(i) => Some(values[i].clone()),
            None => std::env::var(n).ok(),
        };
        let at = || format!("at the point {}", p.label(k));
        let mut drafted = crest_scenario::draft_str(&file, &text, dir_of, &env).with_context(at)?;
        // The flags add to each point's plan as to `crest run`'s, before the one resolver.
        drafted.draft.log_requests |= a.output.log_requests;
        crate::provenance::add(&mut drafted.draft.provenance, &a.output.provenance).with_context(at)?;
        plan::add_monitor_flags(&mut drafted.draft, &a.monitor).with_context(at)?;
        scenarios.push(drafted.resolve(&file).with_context(at)?);
    }
    let dir = rundir::prepare_dir(a.output.out.as_deref(), a.output.force)?;
    rundir::write_atomic(&dir.join(rundir::SWEEP), &serde_json::to_vec_pretty(&p)?)?;
    let mut parts = Parts::new(&dir, command_line, readers);
    let mut setup_failed = None;
    for (k, s) in scenarios.into_iter().enumerate() {
        let label = p.label(k);
        let setup = match &a.setup {
            Some(cmd) => {
                let record = run_setup(cmd, &p, k, a.output.quiet)?;
                if record.exit_code != Some(0) {
                    setup_failed = Some(format!(
                        "--setup for {label} failed: {}",
                        crest_report::fmt::words::setup_failed(&record)
                    ));
                    break;
                }
                Some(record)
            }
            None => None,
        };
        let workload = Arc::new(crest_flow::FlowWorkload::new(s.flow));
        let segment = Segment {
            setup: setup.clone(),
            kind: StepKind::Point(label.clone()),
            start_s: 0.0,
            end_s: 0.0,
            users: None,
            rate: None,
        };
        let results = parts.measure(&s.plan, workload, segment, a.output.quiet)?;
        if !a.output.quiet {
            eprintln!(
                "{label}: {} requests in {:.1} s",
                results.stats.iter().map(|s| s.count).sum::<u64>(),
                results.duration_s
            );
        }
        // Each point is a run of its own, with its own reports; its setup ran before its first
        // step.
        if let Some(first) = results.segments.first_mut() {
            first.setup = setup;
        }
        let own = dir.join(crest_report::study::point_dir(k));
        std::fs::create_dir_all(&own).with_context(|| format!("cannot create {}", own.display()))?;
        rundir::write_atomic(&own.join(rundir::RESULTS), &serde_json::to_vec_pretty(&*results)?)?;
        if let Err(e) = output::write_reports(&own, results) {
            eprintln!("error: {label}: {e:#}");
            parts.lost_a_file();
        }
        if parts.interrupted() {
            break;
        }
    }
    if parts.done().is_empty() {
        output::discard_if_unused(&dir);
        let _ = std::fs::remove_file(dir.join(rundir::SWEEP));
        let _ = std::fs::remove_dir(&dir);
        match setup_failed {
            Some(why) => bail!("{why}; no point was measured"),
            None => bail!("no point ran"),
        }
    }
    let study_path = write_study(&dir)?;
    let kept = parts.done().len();
    let config = whole_config(parts.done());
    let (mut results, journaled) = parts.join(false, 0)?;
    // The points are runs of their own, each as its scenario ended it: the sweep completed
    // unless a signal stopped it.
    if !matches!(results.ended_by, EndReason::Sigint | EndReason::Sigterm) {
        results.ended_by = EndReason::Completed;
    }
    results.config = RunConfig {
        duration_s: Some(results.duration_s),
        ..config
    };
    let written = output::write_all(&dir, &results, &a.output, journaled, readers.page.as_deref())?;
    if let Some(why) = setup_failed {
        bail!(
            "{why}; the {kept} point(s) measured before it are kept, with their study: {}",
            study_path.display()
        );
    }
    if !a.output.quiet {
        eprintln!("study: {}", study_path.display());
    }
    Ok(crate::exit::of_run(results.ended_by, &written, a.output.strict))
}

/// Runs the setup command of point `k` with its values (as `{NAME}` in the command and in the
/// environment), timing it from start to exit.
fn run_setup(cmd: &str, p: &Points, k: usize, quiet: bool) -> Result<SetupRecord> {
    let label = p.label(k);
    let mut cmd = cmd.to_string();
    let mut sh = std::process::Command::new("sh");
    for (n, v) in p.params.iter().zip(&p.points[k]) {
        cmd = cmd.replace(&format!("{{{n}}}"), v);
        sh.env(n, v);
    }
    if !quiet {
        eprintln!("setup for {label}: {}", crest_model::redact::text(&cmd));
    }
    let started = std::time::Instant::now();
    let status = sh
        .arg("-c")
        .arg(&cmd)
        .status()
        .with_context(|| format!("--setup for {label}: cannot start `sh`"))?;
    Ok(SetupRecord {
        duration_s: started.elapsed().as_secs_f64(),
        exit_code: status.code(),
    })
}

/// The joined run's configuration, describing every point rather than the first alone: the
/// most users (or the highest rate) any point ran, and the iterations, request count and
/// in-flight cap only when every point had the same.
fn whole_config(parts: &[(Segment, Results)]) -> RunConfig {
    let configs: Vec<&RunConfig> = parts.iter().map(|(_, r)| &r.config).collect();
    let same = |f: fn(&RunConfig) -> Option<u64>| {
        let first = f(configs[0]);
        configs.iter().all(|c| f(c) == first).then_some(first).flatten()
    };
    RunConfig {
        concurrency: configs.iter().map(|c| c.concurrency).max().unwrap_or(0),
        rate: configs.iter().filter_map(|c| c.rate).reduce(f64::max),
        iterations: same(|c| c.iterations),
        requests: same(|c| c.requests),
        ..configs[0].clone()
    }
}

/// Writes the study of the points measured in `dir` (those with a results.json); returns the
/// path of its Markdown.
pub fn write_study(dir: &Path) -> Result<std::path::PathBuf> {
    let path = dir.join(rundir::SWEEP);
    let p: Points = serde_json::from_slice(
        &crest_model::input::read_file(&path, crest_model::input::MAX_RESULTS)
            .with_context(|| format!("{}: cannot read it", path.display()))?,
    )
    .with_context(|| format!("{}: not a sweep's record", path.display()))?;
    let mut measured = Vec::new();
    for k in 0..p.points.len() {
        let results = dir.join(crest_report::study::point_dir(k)).join(rundir::RESULTS);
        if !results.is_file() {
            break;
        }
        let r = rundir::read_results(&results)?;
        let a = crest_analysis::analyze(&r).with_context(|| format!("cannot analyse {}", results.display()))?;
        let setup = r.segments.first().and_then(|g| g.setup.clone());
        measured.push((p.label(k), p.points[k].clone(), a, setup));
    }
    let points: Vec<crest_analysis::study::PointRun> = measured
        .iter()
        .map(|(label, values, analysis, setup)| crest_analysis::study::PointRun {
            label: label.clone(),
            values: values.clone(),
            analysis,
            setup: setup.clone(),
        })
        .collect();
    let s = crest_analysis::study::study(&p.params, &points);
    rundir::write_files(dir, &crest_report::study_files(&s)?)?;
    Ok(dir.join("study.md"))
}
