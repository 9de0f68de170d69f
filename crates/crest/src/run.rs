//! `crest run`: one run of a URL (quick mode, with `-c` levels in [`crate::levels`]) or of a
//! scenario, measured by [`crate::measure`] and written by [`crate::output`].

use crate::cli::{OutputArgs, RunArgs};
use crate::measure::{measure, Readers};
use crate::{output, plan, rundir};
use anyhow::{bail, Result};
use crest_engine::Workload;
use crest_model::plan::Plan;
use std::path::Path;
use std::sync::Arc;

/// `crest run URL` or `crest run SCENARIO`. Returns the exit code.
pub fn command(a: &RunArgs, args: &[String], readers: &Readers) -> Result<u8> {
    output::check_before(&a.output)?;
    let levels = plan::levels(a)?;
    if a.url.contains("://") {
        return match levels.as_slice() {
            [] | [_] => quick(plan::resolve(a)?, args, &a.output, readers),
            levels => {
                let base = plan::draft_of_run(a)?;
                let workload = Arc::new(plan::http_workload(&plan::finish(base.clone())?)?);
                crate::levels::run(base, workload, levels, a, args, readers)
            }
        };
    }
    if levels.len() > 1 {
        let scenario = scenario(a, None)?;
        let plan = plan::finish(scenario.draft.clone())?;
        let workload = Arc::new(crest_flow::FlowWorkload::new(scenario.flow.finish(&plan)?));
        return crate::levels::run(scenario.draft, workload, &levels, a, args, readers);
    }
    prepare(a, None)?.execute(args, &a.output, readers)
}

/// A run's plan and what sends it, resolved from its flags.
pub struct Prepared {
    pub plan: Plan,
    /// A scenario's users; quick mode's request otherwise.
    pub flows: Option<crest_flow::FlowWorkload>,
    /// The files a scenario read (see `crest_scenario::Drafted::files`).
    pub files: Vec<String>,
}

impl Prepared {
    /// Runs it and writes its results. Returns the process exit code.
    pub fn execute(self, command_line: &[String], out: &OutputArgs, readers: &Readers) -> Result<u8> {
        match self.flows {
            Some(w) => execute(self.plan, w, command_line, out, readers),
            None => quick(self.plan, command_line, out, readers),
        }
    }
}

/// Resolves the plan of `a`: its URL's (one level), or its scenario's, read from the file or,
/// with `text`, from that text and the files beside it in `dir` (a collector's, handed on).
pub fn prepare(a: &RunArgs, text: Option<(&str, &Path)>) -> Result<Prepared> {
    if plan::levels(a)?.len() > 1 {
        bail!("-c: levels run one after another; give one level here");
    }
    if a.url.contains("://") {
        return Ok(Prepared {
            plan: plan::resolve(a)?,
            flows: None,
            files: Vec::new(),
        });
    }
    let scenario = scenario(a, text)?;
    let draft = scenario.draft;
    let plan = plan::finish(draft)?;
    let flows = crest_flow::FlowWorkload::new(scenario.flow.finish(&plan)?);
    Ok(Prepared {
        plan,
        flows: Some(flows),
        files: scenario.files,
    })
}

/// A scenario's draft with the run's flags over the file's load (at the first `-c` level) and
/// added to the rest, not yet resolved; read from the file or, with `text`, from that text and
/// the files beside it in `dir`.
fn scenario(a: &RunArgs, text: Option<(&str, &Path)>) -> Result<crest_scenario::Drafted> {
    if text.is_none() {
        plan::scenario_path(a)?;
    }
    plan::refuse_request_flags(a)?;
    let mut scenario = match text {
        Some((text, dir)) => crest_scenario::draft_str(&a.url, text, dir, &|name| std::env::var(name).ok())?,
        None => crest_scenario::draft(Path::new(&a.url))?,
    };
    crate::validate::warn(&a.url, &scenario.warnings);
    plan::load_over(&mut scenario.draft, a)?;
    plan::add_flags(&mut scenario.draft, &plan::Flags::of_run(a))?;
    Ok(scenario)
}

/// Runs a quick-mode plan.
pub fn quick(plan: Plan, command_line: &[String], out: &OutputArgs, readers: &Readers) -> Result<u8> {
    let workload = crate::plan::http_workload(&plan)?;
    execute(plan, workload, command_line, out, readers)
}

/// Runs `plan` with `workload` and writes its results. Returns the process exit code.
pub fn execute<W: Workload>(
    plan: Plan,
    workload: W,
    command_line: &[String],
    out: &OutputArgs,
    readers: &Readers,
) -> Result<u8> {
    let dir = rundir::prepare_dir(out.out.as_deref(), out.force)?;
    let journal = dir.join(rundir::JOURNAL);
    let measured = match measure(
        &plan,
        Arc::new(workload),
        command_line,
        out.quiet,
        Some((&journal, None)),
        readers,
    ) {
        Ok(m) => m,
        Err(e) => {
            output::discard_if_unused(&dir);
            return Err(e);
        }
    };
    let written = output::write_all(
        &dir,
        &measured.results,
        out,
        measured.journaled,
        readers.page.as_deref(),
    )?;
    Ok(crate::exit::of_run(measured.results.ended_by, &written, out.strict))
}
