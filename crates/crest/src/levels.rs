//! Quick-mode levels (`crest run URL -c 10,20,50 -n 10x`): one level after another, as an `ab`
//! loop over concurrency runs them, joined into one run with a step per level, so that the
//! per-step analysis (optimal load, saturation, breaking point) reads them as it reads a
//! stepping profile. Each level is measured like a probe of `crest find`, by the same code.

use crate::cli::RunArgs;
use crate::find::joined;
use crate::measure::measure;
use crate::run::exit_code;
use crate::{output, rundir};
use anyhow::Result;
use crest_analysis::find::Level;
use crest_model::plan::{Draft, LoadDraft, UsersProfile};
use crest_model::results::Segment;
use crest_model::step::StepKind;
use crest_report::fmt::words;
use std::sync::Arc;

/// Runs `base` (quick mode's draft at the first level) at each of `levels` users in turn, each
/// level resolved from it on its own, and writes the joined results. Returns the exit code.
pub fn run(base: Draft, levels: &[u64], args: &RunArgs, command_line: &[String]) -> Result<u8> {
    let workload = Arc::new(crate::plan::http_workload(&crate::plan::finish(base.clone())?)?);
    let out = &args.output;
    let dir = rundir::prepare_dir(out.out.as_deref(), out.force)?;
    let (mut parts, mut interrupted, mut stopped_by) = (Vec::new(), None, None);
    // False once a level's journal or request log could not be written in full.
    let mut whole = true;
    for (k, &users) in levels.iter().enumerate() {
        let level = Level {
            value: users as f64,
            open: false,
        };
        // -n and -d apply to each level, as they did to the first.
        let load = LoadDraft::Closed {
            users: Some(UsersProfile::constant(users)),
            iterations: crate::plan::per_user(args),
        };
        let plan = crate::plan::finish(base.at(load, StepKind::Level(level.step())))?;
        let label = Segment {
            setup: None,
            kind: StepKind::Level(level.step()),
            start_s: 0.0,
            end_s: 0.0,
            users: Some(users),
            rate: None,
        };
        if !out.quiet {
            eprintln!("level {} of {}: {}", k + 1, levels.len(), words::step_kind(&label.kind));
        }
        let journal = dir.join(rundir::journal_part(k));
        let m = measure(
            &plan,
            Arc::clone(&workload),
            command_line,
            out.quiet,
            Some((&journal, Some(label.clone()))),
        )?;
        // A stop condition or a signal ends the study, not just its level.
        stopped_by = m.results.stopped_by.clone();
        whole &= m.whole;
        parts.push((label, m.results));
        if m.interrupted.is_some() || stopped_by.is_some() {
            interrupted = m.interrupted;
            break;
        }
    }
    let mut results = joined(parts, interrupted, false, 0, command_line)?;
    results.stopped_by = stopped_by;
    let mut written = output::write_all(&dir, &results, out)?;
    written.complete &= whole;
    Ok(exit_code(results.ended_by, &written, out.strict))
}
