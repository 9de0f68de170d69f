//! `crest report DIR`: writes a run's reports again from its results.json, or, for a run that
//! was killed or could not write them, from its journals first.

use crate::cli::ReportArgs;
use crate::{journal, output, rundir, sweep};
use anyhow::{Context, Result};
use std::path::Path;

/// Rewrites the reports of the run in `a.dir`. Returns the exit code.
pub fn command(a: &ReportArgs) -> Result<u8> {
    let results = match (a.dir.is_dir() && !a.dir.join(rundir::RESULTS).exists())
        .then(|| journal::rebuild(&a.dir))
        .transpose()?
        .flatten()
    {
        Some(r) => {
            // A run that was killed, or could not write its results: they are what its
            // journal adds up to.
            let path = a.dir.join(rundir::RESULTS);
            rundir::write_atomic(&path, &serde_json::to_vec_pretty(&r)?)?;
            eprintln!(
                "rebuilt {} from {} ({} intervals, ended by {})",
                path.display(),
                rundir::journals(&a.dir)
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                r.intervals.len(),
                crest_report::fmt::words::ended(&r)
            );
            r
        }
        None => rundir::read_results(&a.dir)?,
    };
    let dir = if a.dir.is_dir() {
        a.dir.clone()
    } else {
        a.dir.parent().map(Path::to_path_buf).unwrap_or_default()
    };
    let analysis = crest_analysis::analyze(&results)
        .with_context(|| format!("{}: cannot analyse the results", a.dir.display()))?;
    let files = crest_report::run_files(&results, &analysis).with_context(|| a.dir.display().to_string())?;
    rundir::write_files(&dir, &files)?;
    output::stdout(&crest_report::terminal::render(&results, &analysis));
    for f in crest_report::RUN_FILES {
        eprintln!("wrote {}", dir.join(f).display());
    }
    // A sweep's directory also holds the study of its points.
    if dir.join(rundir::SWEEP).is_file() {
        eprintln!("wrote {}", sweep::write_study(&dir)?.display());
    }
    Ok(0)
}
