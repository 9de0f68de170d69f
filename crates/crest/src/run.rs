//! `crest run`: one run of a URL (quick mode, with `-c` levels in [`crate::levels`]) or of a
//! scenario, measured by [`crate::measure`] and written by [`crate::output`]; and the exit code
//! of every run.

use crate::cli::{OutputArgs, RunArgs};
use crate::measure::measure;
use crate::{output, plan, rundir};
use anyhow::{bail, Result};
use crest_engine::Workload;
use crest_model::plan::Plan;
use crest_model::results::EndReason;
use std::path::Path;
use std::sync::Arc;

/// `crest run URL` or `crest run SCENARIO`. Returns the exit code.
pub fn command(a: &RunArgs, args: &[String]) -> Result<u8> {
    if a.url.contains("://") {
        return match plan::levels(a)?.as_slice() {
            [] | [_] => quick(plan::resolve(a)?, args, &a.output),
            levels => crate::levels::run(plan::draft_of_run(a)?, levels, a, args),
        };
    }
    prepare(a, None)?.execute(args, &a.output)
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
    pub fn execute(self, command_line: &[String], out: &OutputArgs) -> Result<u8> {
        match self.flows {
            Some(w) => execute(self.plan, w, command_line, out),
            None => quick(self.plan, command_line, out),
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
pub fn quick(plan: Plan, command_line: &[String], out: &OutputArgs) -> Result<u8> {
    let workload = crate::plan::http_workload(&plan)?;
    execute(plan, workload, command_line, out)
}

/// Runs `plan` with `workload` and writes its results. Returns the process exit code.
pub fn execute<W: Workload>(plan: Plan, workload: W, command_line: &[String], out: &OutputArgs) -> Result<u8> {
    let dir = rundir::prepare_dir(out.out.as_deref(), out.force)?;
    let journal = dir.join(rundir::JOURNAL);
    let measured = match measure(
        &plan,
        Arc::new(workload),
        command_line,
        out.quiet,
        Some((&journal, None)),
    ) {
        Ok(m) => m,
        Err(e) => {
            output::discard_if_unused(&dir);
            return Err(e);
        }
    };
    let mut written = output::write_all(&dir, &measured.results, out)?;
    written.complete &= measured.whole;
    Ok(exit_code(measured.results.ended_by, &written, out.strict))
}

/// Exit code of a run whose results could not be written in full (the summary was shown, and
/// says what was kept).
pub const EXIT_NOT_WRITTEN: u8 = 4;

/// The process exit code for a finished run.
pub fn exit_code(ended_by: EndReason, written: &output::Written, strict: bool) -> u8 {
    let summary = &written.summary;
    match ended_by {
        EndReason::Sigint => 130,
        EndReason::Sigterm => 143,
        _ if !written.complete => EXIT_NOT_WRITTEN,
        // Nothing succeeded: whatever the thresholds say, the run measured no service.
        _ if summary.successes == 0 => 1,
        _ if summary.thresholds_failed() => 1,
        _ if strict && !summary.client_bound.is_empty() => 3,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code a run can exit with is listed in `--help`, the one place a user learns them.
    #[test]
    fn help_lists_every_exit_code_a_run_returns() {
        for code in [0, 1, 2, 3, EXIT_NOT_WRITTEN, 130, 143] {
            assert!(
                crate::cli::EXIT_CODES.contains(&format!("\n  {code} ")),
                "exit code {code} is missing from --help"
            );
        }
    }
}
