//! What a finished run leaves: results.json, the reports and the summary, written through
//! [`crate::rundir`], and the clean-up of a run that measured nothing.

use crate::cli::OutputArgs;
use crate::rundir;
use anyhow::{Context, Result};
use crest_model::results::Results;
use std::path::Path;

/// Removes a run directory that a run which failed before sending anything left empty (but
/// for a journal with no interval in it, and its request log). A journal with no line at all is
/// one the disk had no room for: its run failed before sending too.
pub fn discard_if_unused(dir: &Path) {
    for j in rundir::journals(dir) {
        let never_written = std::fs::symlink_metadata(&j).is_ok_and(|m| m.is_file() && m.len() == 0);
        if never_written || crate::journal::read(&j).is_ok_and(|j| j.intervals.is_empty()) {
            let _ = std::fs::remove_file(&j);
            let _ = std::fs::remove_file(rundir::request_log_beside(&j));
            let _ = std::fs::remove_file(rundir::reserve_of(&j));
        }
    }
    let _ = std::fs::remove_dir(dir);
}

/// What [`write_all`] achieved.
pub struct Written {
    /// The summary, shown and returned whatever was written.
    pub summary: crest_analysis::Summary,
    /// False when a file of the run is not whole on disk: its journal or request log while it
    /// ran, or results.json, a report or the summary file after; or the run is not in the team
    /// store it was to be written to. The exit code says so.
    pub complete: bool,
}

/// Writes results.json, then the reports, then shows the summary, and shows the report on
/// `page`, when the run had one. The results are written first, so that whatever fails later,
/// nothing measured is lost; when they cannot be written (a full or failing disk), the summary
/// is still shown, with what was kept. `journaled` is false when the run's journal or request
/// log could not be written in full.
pub fn write_all(
    dir: &Path,
    results: &Results,
    out: &OutputArgs,
    journaled: bool,
    page: Option<&crest_live::Hub>,
) -> Result<Written> {
    let path = dir.join(rundir::RESULTS);
    let written = serde_json::to_vec_pretty(results)
        .context("cannot serialise the results")
        .and_then(|json| rundir::write_atomic(&path, &json));

    let analysis = crest_analysis::analyze(results).context("cannot analyse the results")?;
    // Every run a debug build measures (so every run the test suite drives) must give answers
    // that agree; a document read back from disk may have been edited into nonsense, and is
    // only reported.
    #[cfg(debug_assertions)]
    {
        let violations = crest_analysis::invariants::check(&analysis);
        assert!(
            violations.is_empty(),
            "the analysis contradicts itself: {}",
            violations
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    // The reports come second: if one fails, results.json is already safe and `crest report`
    // can try again.
    let mut reports_written = true;
    if written.is_ok() {
        let files = crest_report::run_files(results, &analysis).map_err(anyhow::Error::from);
        if let Err(e) = files.and_then(|f| rundir::write_files(dir, &f)) {
            eprintln!(
                "error: {e:#}; results.json is complete, and `crest report {}` retries",
                dir.display()
            );
            reports_written = false;
        }
    }
    // The team store comes after the run's own files, which never wait for it or depend on it.
    if !store(results, &analysis, out) {
        reports_written = false;
    }
    let text = crest_report::terminal::render(results, &analysis);
    let summary_json = crest_report::json::summary_json(&analysis.summary).context("cannot serialise the summary")?;
    let json_to_stdout = out.summary_json.as_deref() == Some("-");
    if !out.quiet {
        if json_to_stdout {
            eprint!("{text}");
        } else {
            stdout(&text);
        }
    }
    match out.summary_json.as_deref() {
        Some("-") => stdout(&format!("{summary_json}\n")),
        Some(p) => {
            if let Err(e) = rundir::write_named(Path::new(p), summary_json.as_bytes()) {
                eprintln!("error: --summary-json {p}: {e:#}");
                reports_written = false;
            }
        }
        None => {}
    }
    if !ci_files(results, &analysis, out) {
        reports_written = false;
    }
    if let Err(e) = &written {
        let kept = rundir::journals(dir);
        let kept = if kept.is_empty() {
            "nothing but this summary".to_string()
        } else {
            format!(
                "{} (`crest report {}` rebuilds results.json and the reports from it once there is room)",
                kept.iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                dir.display()
            )
        };
        eprintln!("error: {e:#}; kept: {kept}");
        return Ok(Written {
            summary: analysis.summary,
            complete: false,
        });
    }
    // The live page shows the report of every run, search and sweep that had one.
    if let Some(page) = page {
        crate::web::ended(page, dir, crest_report::fmt::words::ended(results).into());
    }
    if !out.quiet {
        eprintln!("\nresults: {}", path.display());
        eprintln!("report:  {}", dir.join("report.html").display());
        let log = dir.join(rundir::REQUEST_LOG);
        if log.is_file() {
            eprintln!("log:     {}", log.display());
        }
    }
    Ok(Written {
        summary: analysis.summary,
        complete: reports_written && journaled,
    })
}

/// Writes `--junit` (atomically, as the summary file) and appends `--markdown-summary`, as CI
/// jobs append their step summaries; says on stderr what could not be written, and returns
/// false then.
fn ci_files(results: &Results, analysis: &crest_analysis::Analysis, out: &OutputArgs) -> bool {
    let mut ok = true;
    if let Some(p) = &out.junit {
        let xml = crest_report::junit::run(results, analysis, out.strict).context("cannot render the JUnit XML");
        if let Err(e) = xml.and_then(|x| rundir::write_named(p, &x)) {
            eprintln!("error: --junit {}: {e:#}", p.display());
            ok = false;
        }
    }
    if let Some(p) = &out.markdown_summary {
        let md = crest_report::markdown::ci_summary(results, analysis).context("cannot render the Markdown summary");
        if let Err(e) = md.and_then(|m| append(p, m.as_bytes())) {
            eprintln!("error: --markdown-summary {}: {e:#}", p.display());
            ok = false;
        }
    }
    ok
}

/// Appends `bytes` to `path` in one write, creating it when missing.
pub fn append(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .with_context(|| format!("cannot append to {}", path.display()))
}

/// What the run's end would find wrong with its outputs, said before anything is sent: a file
/// flag whose directory is missing, a store URL that cannot name a store. A run of minutes
/// is not spent to fail on a mistyped path, and the error is a usage error (2), not a full
/// disk (4).
pub fn check_before(out: &OutputArgs) -> Result<()> {
    let summary_json = out.summary_json.as_deref().filter(|p| *p != "-").map(Path::new);
    for (flag, path) in [
        ("--junit", out.junit.as_deref()),
        ("--markdown-summary", out.markdown_summary.as_deref()),
        ("--summary-json", summary_json),
    ] {
        let Some(path) = path else { continue };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            anyhow::bail!(
                "{flag} {}: {} is not a directory (the file is written when the run ends, so its directory must exist before)",
                path.display(),
                dir.display()
            );
        }
        if path.is_dir() {
            anyhow::bail!("{flag} {}: is a directory; give a file", path.display());
        }
    }
    let from_flag = out.store.is_some();
    if let Some(url) = configured_store(out) {
        crest_store::check_url(&url)
            .map_err(|e| anyhow::anyhow!("{}: {e}", if from_flag { "--store" } else { "CREST_STORE" }))?;
    }
    Ok(())
}

/// The team store a run is written to: `--store`, else `$CREST_STORE`. A worker's share of a
/// run is not a run of its own (its `$CREST_STORE` would store it beside the whole): the
/// collector stores the run.
fn store_url(results: &Results, out: &OutputArgs) -> Option<String> {
    if results.config.worker.is_some() {
        return None;
    }
    configured_store(out)
}

/// `--store`, else `$CREST_STORE`, when either names one.
fn configured_store(out: &OutputArgs) -> Option<String> {
    out.store
        .clone()
        .or_else(|| std::env::var("CREST_STORE").ok())
        .filter(|u| !u.is_empty())
}

/// Writes the run to the team store, when there is one; false when it could not be written, said
/// in one line that names the store without its password.
fn store(results: &Results, analysis: &crest_analysis::Analysis, out: &OutputArgs) -> bool {
    let Some(url) = store_url(results, out) else {
        return true;
    };
    match crest_store::write_run(&url, results, analysis) {
        Ok(id) => {
            if !out.quiet {
                eprintln!("stored:  run {id} in {}", crest_store::shown(&url));
            }
            true
        }
        Err(e) => {
            eprintln!("error: {}", e.to_string().replace('\n', " "));
            false
        }
    }
}

/// Writes the reports of `results` into `dir`, beside a results.json already there: a sweep's
/// point, which is a run of its own.
pub fn write_reports(dir: &Path, results: &Results) -> Result<()> {
    let analysis = crest_analysis::analyze(results).context("cannot analyse the results")?;
    let files = crest_report::run_files(results, &analysis)?;
    rundir::write_files(dir, &files)
}

/// Writes `text` to standard output. A reader that went away (`crest ... | head`) is not an
/// error worth a panic, nor a reason to lose the results being written: the rest is dropped.
pub fn stdout(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}
