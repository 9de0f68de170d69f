//! The run directory: its layout, every file name in it defined here once, and the safe ways
//! crest writes there. The bottom of the binary: the journal, the request log and the outputs
//! write through this module, and it imports none of them.
//!
//! crest writes only inside a run directory it created or that was empty (or, with `--force`,
//! that held an earlier run whose files it replaces), creates every file exclusively, and never
//! follows a symbolic link there: a link planted in the directory makes the write fail rather
//! than land elsewhere.
//!
//! A run directory holds `results.json` ([`RESULTS`]); the reports `crest_report::RUN_FILES`
//! names; the journal ([`JOURNAL`], or one per part of a run of several parts,
//! [`journal_part`]) with its disk reserve while it is written ([`reserve_of`]); with
//! `--log-requests`, a request log beside each journal ([`request_log_beside`]); a capacity
//! search's probes so far ([`FIND`]) until results.json holds them; and a sweep's points
//! ([`SWEEP`]), each in a run directory of its own (`crest_report::study::point_dir`).

use anyhow::{bail, Context, Result};
use crest_model::results::Results;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where runs go when `--out` is not given: a fresh `crest-results/<UTC timestamp>`.
const DEFAULT_BASE: &str = "crest-results";

/// The results document.
pub const RESULTS: &str = "results.json";

/// The journal of a run of one part.
pub const JOURNAL: &str = "journal.jsonl";

/// A capacity search's probes and their verdicts so far, rewritten after each probe and removed
/// once results.json holds them.
pub const FIND: &str = "find.json";

/// What a sweep's directory records of its points, so `crest report` can redo the study.
pub const SWEEP: &str = "sweep.json";

/// The request log of a run of one part.
pub const REQUEST_LOG: &str = "request-log.csv.gz";

/// The journal of part `k` of a run of several parts (the probes of a search, the points of a
/// sweep, the levels of quick mode).
pub fn journal_part(k: usize) -> String {
    format!("journal-{:03}.jsonl", k + 1)
}

/// The reserve's file beside a journal.
pub fn reserve_of(journal: &Path) -> PathBuf {
    journal.with_extension("reserve")
}

/// The request log beside `journal`: `journal.jsonl` has `request-log.csv.gz`,
/// `journal-003.jsonl` has `request-log-003.csv.gz`.
pub fn request_log_beside(journal: &Path) -> PathBuf {
    let name = journal.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let part = name
        .strip_prefix("journal")
        .and_then(|r| r.strip_suffix(".jsonl"))
        .unwrap_or_default();
    if part.is_empty() {
        journal.with_file_name(REQUEST_LOG)
    } else {
        journal.with_file_name(format!("request-log{part}.csv.gz"))
    }
}

/// The journals of a run directory, in order: `journal.jsonl`, or the numbered parts.
pub fn journals(dir: &Path) -> Vec<PathBuf> {
    let single = dir.join(JOURNAL);
    if single.is_file() {
        return vec![single];
    }
    (0..)
        .map(|k| dir.join(journal_part(k)))
        .take_while(|p| p.is_file())
        .collect()
}

/// The temporary file [`write_atomic`] writes beside `path` before renaming it into place:
/// `report.html.tmp` beside `report.html`.
fn temp_of(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// True for a file crest writes into a run directory, which `--force` removes: results.json,
/// the reports, journals and their reserves, request logs, and the temporary files beside them.
fn is_ours(name: &str) -> bool {
    let own = |n: &str| n == RESULTS || crest_report::RUN_FILES.contains(&n);
    own(name)
        || name.strip_suffix(".tmp").is_some_and(own)
        || (name.starts_with("journal") && (name.ends_with(".jsonl") || name.ends_with(".reserve")))
        || (name.starts_with("request-log") && name.ends_with(".csv.gz"))
}

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
        None => fresh_dir(prefix),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("--out {}: cannot create the directory", dir.display()))?;
    Ok(dir)
}

/// A run directory's default name, not taken yet: `crest-results/<prefix><UTC timestamp>`.
pub fn fresh_dir(prefix: &str) -> PathBuf {
    let base = PathBuf::from(DEFAULT_BASE);
    let stamp = format!("{prefix}{}", chrono::Utc::now().format("%Y%m%dT%H%M%SZ"));
    let mut dir = base.join(&stamp);
    let mut n = 2;
    while dir.symlink_metadata().is_ok() {
        dir = base.join(format!("{stamp}-{n}"));
        n += 1;
    }
    dir
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
        if is_ours(name) {
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

/// Reads a results document from a run directory or a file; errors name the path.
pub fn read_results(path: &Path) -> Result<Results> {
    let file = if path.is_dir() {
        path.join(RESULTS)
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
    let tmp = temp_of(path);
    match std::fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot remove {}", tmp.display())),
    }
    let mut f = create_new(&tmp)?;
    let written = f
        .write_all(bytes)
        .and_then(|()| f.sync_all())
        .with_context(|| format!("cannot write {}", tmp.display()))
        .and_then(|()| std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display())));
    if written.is_err() {
        // A full disk leaves the earlier file or none, never a temporary file beside it.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Writes rendered report files into `dir`, each atomically; stops at the first that fails.
pub fn write_files(dir: &Path, files: &[crest_report::Rendered]) -> Result<()> {
    files.iter().try_for_each(|f| write_atomic(&dir.join(f.name), &f.bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_sits_beside_its_journal() {
        assert_eq!(
            request_log_beside(Path::new("/r/journal.jsonl")),
            Path::new("/r/request-log.csv.gz")
        );
        assert_eq!(
            request_log_beside(Path::new("/r/journal-003.jsonl")),
            Path::new("/r/request-log-003.csv.gz")
        );
    }

    #[test]
    fn force_removes_only_what_crest_writes() {
        for name in [
            RESULTS,
            "results.json.tmp",
            "report.md",
            "report.html.tmp",
            JOURNAL,
            "journal-002.jsonl",
            "journal.reserve",
            REQUEST_LOG,
            "request-log-003.csv.gz",
        ] {
            assert!(is_ours(name), "{name}");
        }
        for name in ["requests.csv.gz", "notes.md", "results.json.bak", "my.tmp"] {
            assert!(!is_ours(name), "{name}");
        }
    }
}
