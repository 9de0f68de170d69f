//! The run directory and what goes into it.
//!
//! crest writes only inside a run directory it created or that was empty (or, with `--force`,
//! that held an earlier run whose files it replaces), creates every file exclusively, and never
//! follows a symbolic link there: a link planted in the directory makes the write fail rather
//! than land elsewhere.

use crate::cli::OutputArgs;
use anyhow::{bail, Context, Result};
use crest_model::results::Results;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Files crest writes into a run directory besides the reports.
const OWN_FILES: [&str; 2] = ["results.json", "results.tmp"];

/// Creates the run directory: `--out DIR`, or a fresh `crest-results/<UTC timestamp>`.
pub fn prepare_dir(out: Option<&Path>, force: bool) -> Result<PathBuf> {
    prepare_named(out, "", force)
}

/// Like [`prepare_dir`], with a prefix for the default name (`compare-`).
pub fn prepare_named(out: Option<&Path>, prefix: &str, force: bool) -> Result<PathBuf> {
    let dir = match out {
        Some(d) => {
            check_out(d, force)?;
            d.to_path_buf()
        }
        None => {
            let base = PathBuf::from("crest-results");
            let stamp = format!("{prefix}{}", chrono::Utc::now().format("%Y%m%dT%H%M%SZ"));
            let mut dir = base.join(&stamp);
            let mut n = 2;
            while dir.symlink_metadata().is_ok() {
                dir = base.join(format!("{stamp}-{n}"));
                n += 1;
            }
            dir
        }
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("--out {}: cannot create the directory", dir.display()))?;
    Ok(dir)
}

/// `--out` must be a real directory that is new, empty, or (with `--force`) holds a run whose
/// files are then removed.
fn check_out(d: &Path, force: bool) -> Result<()> {
    let Ok(meta) = d.symlink_metadata() else {
        return Ok(());
    };
    if meta.file_type().is_symlink() {
        bail!(
            "--out {}: is a symbolic link; crest writes only into a real directory",
            d.display()
        );
    }
    if !meta.is_dir() {
        bail!("--out {}: is not a directory", d.display());
    }
    let entries: Vec<PathBuf> = std::fs::read_dir(d)
        .with_context(|| format!("--out {}: cannot read the directory", d.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    if entries.is_empty() {
        return Ok(());
    }
    if !force {
        bail!(
            "--out {}: the directory is not empty (an earlier run?); give a new or empty directory, or --force to replace the run in it",
            d.display()
        );
    }
    for p in entries {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let ours = OWN_FILES.contains(&name)
            || crest_report::RUN_FILES.contains(&name)
            || name
                .strip_suffix(".tmp")
                .is_some_and(|n| crest_report::RUN_FILES.contains(&n))
            || (name.starts_with("journal") && (name.ends_with(".jsonl") || name.ends_with(".reserve")))
            || crate::reqlog::is_log(name);
        if ours {
            // Removing a link removes the link, never what it points to.
            std::fs::remove_file(&p).with_context(|| format!("--force: cannot remove {}", p.display()))?;
        }
    }
    Ok(())
}

/// Creates a file that must not exist yet, never through a symbolic link.
pub fn create_new(path: &Path) -> Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))
}

/// Removes a run directory that a run which failed before sending anything left empty (but
/// for a journal with no interval in it, and its request log).
pub fn discard_if_unused(dir: &Path) {
    for j in crate::journal::in_dir(dir) {
        if crate::journal::read(&j).is_ok_and(|j| j.intervals.is_empty()) {
            let _ = std::fs::remove_file(&j);
            let _ = std::fs::remove_file(crate::reqlog::beside(&j));
            let _ = std::fs::remove_file(crate::journal::reserve_of(&j));
        }
    }
    let _ = std::fs::remove_dir(dir);
}

/// What [`write_all`] achieved.
pub struct Written {
    /// The summary, shown and returned whatever was written.
    pub summary: crest_analysis::Summary,
    /// False when results.json, a report or the summary file could not be written: the exit
    /// code says so.
    pub complete: bool,
}

/// Writes results.json, then the reports, then shows the summary. The results are written
/// first, so that whatever fails later, nothing measured is lost; when they cannot be written
/// (a full or failing disk), the summary is still shown, with what was kept.
pub fn write_all(dir: &Path, results: &Results, out: &OutputArgs) -> Result<Written> {
    let path = dir.join("results.json");
    let written = serde_json::to_vec_pretty(results)
        .context("cannot serialise the results")
        .and_then(|json| write_atomic(&path, &json));

    // The reports come second: if one fails, results.json is already safe and `crest report`
    // can try again.
    let mut reports_written = true;
    let summary = match &written {
        Ok(()) => match crest_report::write_run(dir, results) {
            Ok(analysis) => Some(analysis.summary),
            Err(e) => {
                eprintln!(
                    "error: {e}; results.json is complete, and `crest report {}` retries",
                    dir.display()
                );
                reports_written = false;
                None
            }
        },
        Err(_) => None,
    };
    let summary = match summary {
        Some(s) => s,
        None => crest_analysis::analyze(results)
            .map(|a| a.summary)
            .context("cannot summarise the results")?,
    };
    let text = crest_report::terminal::render(results, &summary);
    let summary_json = crest_report::json::summary_json(&summary).context("cannot serialise the summary")?;
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
            if let Err(e) = write_named(Path::new(p), summary_json.as_bytes()) {
                eprintln!("error: --summary-json {p}: {e:#}");
                reports_written = false;
            }
        }
        None => {}
    }
    if let Err(e) = &written {
        let kept = crate::journal::in_dir(dir);
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
        let _ = std::fs::remove_file(path.with_extension("tmp"));
        return Ok(Written {
            summary,
            complete: false,
        });
    }
    // The live page shows the report of every run, search and sweep that had one.
    crate::web::ended(dir, crest_report::fmt::words::ended(results).into());
    if !out.quiet {
        eprintln!("\nresults: {}", path.display());
        eprintln!("report:  {}", dir.join("report.html").display());
        let log = dir.join(crate::reqlog::FILE);
        if log.is_file() {
            eprintln!("log:     {}", log.display());
        }
    }
    Ok(Written {
        summary,
        complete: reports_written,
    })
}

/// Reads a results document from a run directory or a file; errors name the path.
pub fn read_results(path: &Path) -> Result<Results> {
    let file = if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_path_buf()
    };
    let text = crest_model::input::read_text_file(&file, crest_model::input::MAX_RESULTS)
        .with_context(|| format!("{}: cannot read it", file.display()))?;
    crest_model::results::parse(&text).with_context(|| format!("{}: not a crest results document", file.display()))
}

/// Writes a file the user named on the command line (`--summary-json PATH`): a regular file,
/// or a new one, atomically like every results file; anything else the name leads to
/// (`/dev/stdout`, `/dev/null`, a pipe) is written into as it is. Renaming a file over such a
/// name would replace the device or pipe itself: run as root, `--summary-json /dev/null`
/// would leave the machine a regular file where /dev/null was.
pub fn write_named(path: &Path, bytes: &[u8]) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() && !m.is_dir() => std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|mut f| f.write_all(bytes))
            .with_context(|| format!("cannot write {}", path.display())),
        _ => write_atomic(path, bytes),
    }
}

/// Writes `bytes` to a new temporary file beside `path`, syncs it, and renames it over `path`:
/// `path` is either the old or the new file, never half of one, and a link at `path` is
/// replaced, not followed. Anything else at `path` (a device, a pipe, a socket) is refused
/// rather than replaced.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Ok(m) = std::fs::symlink_metadata(path) {
        let t = m.file_type();
        if !t.is_file() && !t.is_symlink() {
            bail!("{} is not a regular file: crest will not replace it", path.display());
        }
    }
    let tmp = path.with_extension("tmp");
    match std::fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot remove {}", tmp.display())),
    }
    let mut f = create_new(&tmp)?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Writes `text` to standard output. A reader that went away (`crest ... | head`) is not an
/// error worth a panic, nor a reason to lose the results being written: the rest is dropped.
pub fn stdout(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}
