//! `crest compare RUN...`: compares runs, each against the first, and writes the comparison.

use crate::cli::CompareArgs;
use crate::rundir;
use anyhow::{Context, Result};
use std::path::Path;

/// Compares the runs `a` names. Returns the exit code.
pub fn command(a: &CompareArgs) -> Result<u8> {
    // A run is called by its directory, also when its results.json was named.
    let label = |p: &Path| {
        let dir = if p.is_file() { p.parent().unwrap_or(p) } else { p };
        dir.file_name()
            .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
    };
    let mut runs = Vec::with_capacity(a.runs.len());
    for p in &a.runs {
        let analysis = crest_analysis::analyze(&rundir::read_results(p)?)
            .with_context(|| format!("cannot analyse {}", p.display()))?;
        runs.push((analysis, label(p)));
    }
    let runs: Vec<_> = runs.iter().map(|(x, l)| (x, l.as_str())).collect();
    let c = crest_analysis::compare::compare(&runs);
    let dir = rundir::prepare_named(a.out.as_deref(), "compare-", false)?;
    let files = crest_report::compare_files(&c)?;
    rundir::write_files(&dir, &files)?;
    let md = String::from_utf8_lossy(&files[0].bytes);
    print!("{md}");
    eprintln!("\ncomparison: {}", dir.join("compare.html").display());
    Ok(0)
}
