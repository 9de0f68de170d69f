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
        let plan = plan::resolve(a)?;
        return match plan::levels(a)?.as_slice() {
            [] | [_] => quick(plan, args, &a.output),
            levels => crate::levels::run(plan, levels, a, args),
        };
    }
    let given = plan::quick_flags_given(a);
    if !Path::new(&a.url).exists() {
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
    let scenario = crest_scenario::draft(Path::new(&a.url))?;
    crate::validate::warn(&a.url, &scenario.warnings);
    let mut draft = scenario.draft;
    plan::add_flags(&mut draft, &plan::Flags::of_run(a))?;
    let plan = plan::finish(draft)?;
    let workload = crest_flow::FlowWorkload::new(scenario.flow.finish(&plan)?);
    execute(plan, workload, args, &a.output)
}

/// Runs a quick-mode plan.
pub fn quick(plan: Plan, command_line: &[String], out: &OutputArgs) -> Result<u8> {
    let workload = crate::plan::http_workload(&plan)?;
    execute(plan, workload, command_line, out)
}

/// Runs `plan` with `workload` and writes its results. Returns the process exit code.
pub fn execute<W: Workload>(plan: Plan, workload: W, command_line: &[String], out: &OutputArgs) -> Result<u8> {
    let plan = crate::web::manual(plan, &out.web, command_line);
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
