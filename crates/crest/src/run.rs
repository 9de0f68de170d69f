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
    if a.url.contains("://") {
        return match plan::levels(a)?.as_slice() {
            [] | [_] => quick(plan::resolve(a)?, args, &a.output, readers),
            levels => crate::levels::run(plan::draft_of_run(a)?, levels, a, args, readers),
        };
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
    if a.url.contains("://") {
        if plan::levels(a)?.len() > 1 {
            bail!("-c: levels run one after another; give one level here");
        }
        return Ok(Prepared {
            plan: plan::resolve(a)?,
            flows: None,
            files: Vec::new(),
        });
    }
    let given = plan::quick_flags_given(a);
    if text.is_none() && !Path::new(&a.url).exists() {
        // Neither a URL nor a file: saying which flags need a URL would hide that.
        bail!(
            "{:?} is not a URL (http://host/path) nor a scenario file that exists",
            a.url
        );
    }
    if !given.is_empty() {
        bail!(
            "{}: these flags apply to a URL; a scenario sets them itself (see docs/scenario.md)",
            given.join(", ")
        );
    }
    let scenario = match text {
        Some((text, dir)) => crest_scenario::draft_str(&a.url, text, dir, &|name| std::env::var(name).ok())?,
        None => crest_scenario::draft(Path::new(&a.url))?,
    };
    crate::validate::warn(&a.url, &scenario.warnings);
    let mut draft = scenario.draft;
    plan::add_flags(&mut draft, &plan::Flags::of_run(a))?;
    let plan = plan::finish(draft)?;
    let flows = crest_flow::FlowWorkload::new(scenario.flow.finish(&plan)?);
    Ok(Prepared {
        plan,
        flows: Some(flows),
        files: scenario.files,
    })
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
