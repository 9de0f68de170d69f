//! The exit code of every command that measures (run, find, sweep, demo, collect) and of those
//! that write a run's files again (report, merge): one table, listed in `--help`.

use crate::output::Written;
use crest_model::results::EndReason;

/// A run whose results could not be written in full (the summary was shown, and says what was
/// kept), or a command that stopped at a full disk.
pub const NOT_WRITTEN: u8 = 4;

/// `crest history --check`: a figure of the newest run of a label regressed against the runs
/// before it.
pub const REGRESSED: u8 = 5;

/// The process exit code for a finished run.
pub fn of_run(ended_by: EndReason, written: &Written, strict: bool) -> u8 {
    let summary = &written.summary;
    match ended_by {
        EndReason::Sigint => 130,
        EndReason::Sigterm => 143,
        _ if !written.complete => NOT_WRITTEN,
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
        for code in [0, 1, 2, 3, NOT_WRITTEN, REGRESSED, 130, 143] {
            assert!(
                crate::cli::EXIT_CODES.contains(&format!("\n  {code} ")),
                "exit code {code} is missing from --help"
            );
        }
    }
}
