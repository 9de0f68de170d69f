//! Levels (`crest run URL -c 10,20,50 -n 10x`, or a scenario of constant load with the same
//! flags): one level after another, as an `ab` loop over concurrency runs them, joined into one run with a step per level, so that the
//! per-step analysis (optimal load, saturation, breaking point) reads them as it reads a
//! stepping profile. Each level is measured like a probe of `crest find`, by the same code.

use crate::cli::RunArgs;
use crate::measure::Readers;
use crate::parts::Parts;
use crate::{output, rundir};
use anyhow::Result;
use crest_analysis::find::Level;
use crest_engine::Workload;
use crest_model::plan::{Draft, LoadDraft, UsersProfile};
use crest_model::results::Segment;
use crest_model::step::StepKind;
use crest_report::fmt::words;
use std::sync::Arc;

/// Runs `base` (the draft at the first level, with every flag) with `workload` at each of
/// `levels` users in turn, each level resolved from it on its own, and writes the joined
/// results. Returns the exit code.
pub fn run<W: Workload>(
    base: Draft,
    workload: Arc<W>,
    levels: &[u64],
    args: &RunArgs,
    command_line: &[String],
    readers: &Readers,
) -> Result<u8> {
    let out = &args.output;
    let dir = rundir::prepare_dir(out.out.as_deref(), out.force)?;
    let mut parts = Parts::new(&dir, command_line, readers);
    let mut stopped_by = None;
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
        let results = parts.measure(&plan, Arc::clone(&workload), label, out.quiet)?;
        // A stop condition or a signal ends the study, not just its level.
        stopped_by = results.stopped_by.clone();
        if parts.interrupted() || stopped_by.is_some() {
            break;
        }
    }
    let (mut results, journaled) = parts.join(false, 0)?;
    results.stopped_by = stopped_by;
    let written = output::write_all(&dir, &results, out, journaled, readers.page.as_deref())?;
    Ok(crate::exit::of_run(results.ended_by, &written, out.strict))
}
