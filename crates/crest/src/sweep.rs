//! `crest sweep`: one run of a scenario per value of a parameter, with a setup command before
//! each (load 11k, 22k, 60k ... entities and restart the database between points, say).
//! The points become the steps of one report.

use crate::cli::SweepArgs;
use crate::output;
use crate::run::{measure, Interrupt};
use anyhow::{bail, Context, Result};
use crest_model::results::{self, EndReason, Results, Segment};
use std::sync::Arc;

/// Runs the sweep. Returns the exit code.
pub fn sweep(a: &SweepArgs, command_line: &[String]) -> Result<u8> {
    let Some((name, values)) = a.param.split_once('=') else {
        bail!("--param {:?}: write NAME=V1,V2,...", a.param);
    };
    let name = name.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        bail!("--param: {name:?} is not a usable name (letters, digits, _)");
    }
    let values: Vec<&str> = values.split(',').map(str::trim).filter(|v| !v.is_empty()).collect();
    if values.is_empty() {
        bail!("--param {name}: give at least one value");
    }
    let text =
        std::fs::read_to_string(&a.scenario).with_context(|| format!("{}: cannot read it", a.scenario.display()))?;
    let file = a.scenario.display().to_string();
    let dir_of = a.scenario.parent().unwrap_or(std::path::Path::new("."));
    // Every point must be valid before the first setup command runs.
    let mut scenarios = Vec::new();
    for v in &values {
        let env = |n: &str| {
            if n == name {
                Some(v.to_string())
            } else {
                std::env::var(n).ok()
            }
        };
        scenarios.push(crest_scenario::load_str(&file, &text, dir_of, &env)?);
    }
    let dir = output::prepare_dir(a.output.out.as_deref(), a.output.force)?;
    let mut parts: Vec<(Segment, Results)> = Vec::new();
    let mut interrupted = None;
    for (v, s) in values.iter().zip(scenarios) {
        if let Some(cmd) = &a.setup {
            let cmd = cmd.replace(&format!("{{{name}}}"), v);
            if !a.output.quiet {
                eprintln!("setup for {name}={v}: {}", crest_model::redact::text(&cmd));
            }
            let status = std::process::Command::new("sh")
                .arg("-c")
                .arg(&cmd)
                .env(name, v)
                .status()
                .with_context(|| format!("--setup for {name}={v}: cannot start `sh`"))?;
            if !status.success() {
                if parts.is_empty() {
                    output::discard_if_unused(&dir);
                    bail!("--setup for {name}={v} failed ({status}); no point was measured");
                }
                bail!(
                    "--setup for {name}={v} failed ({status}); the {} point(s) measured before it are in their journals: `crest report {}` writes their report",
                    parts.len(),
                    dir.display()
                );
            }
        }
        let workload = Arc::new(crest_flow::FlowWorkload::new(s.flow));
        let label = Segment {
            name: format!("{name}={v}"),
            start_s: 0.0,
            end_s: 0.0,
            users: None,
            rate: None,
        };
        let journal = dir.join(crate::journal::part_file(parts.len()));
        let m = measure(
            &s.plan,
            workload,
            command_line,
            a.output.quiet,
            Some((&journal, Some(label.clone()))),
        )?;
        if !a.output.quiet {
            eprintln!(
                "{name}={v}: {} requests in {:.1} s",
                m.results.stats.iter().map(|s| s.count).sum::<u64>(),
                m.results.duration_s
            );
        }
        parts.push((label, m.results));
        if m.interrupted.is_some() {
            interrupted = m.interrupted;
            break;
        }
    }
    let mut parts = parts.into_iter();
    let Some(first) = parts.next() else {
        bail!("--param {name}: no point ran")
    };
    let mut results = results::concat(first, parts)?;
    results.ended_by = match interrupted {
        Some(Interrupt::Int) => EndReason::Sigint,
        Some(Interrupt::Term) => EndReason::Sigterm,
        None => EndReason::Completed,
    };
    results.config.duration_s = Some(results.duration_s);
    let written = output::write_all(&dir, &results, &a.output)?;
    Ok(crate::run::exit_code(results.ended_by, &written, a.output.strict))
}
