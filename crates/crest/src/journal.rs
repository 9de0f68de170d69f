//! Writes the journal (`journal.jsonl`) while a run goes: its start, each closed interval, its
//! end. A killed run keeps everything up to the last sync, a few seconds at most, and
//! `crest report` rebuilds results.json and every report from it.

use crate::rundir;
use anyhow::{Context, Result};
use crest_model::journal::{self, Entry};
use std::fs::File;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Longest a closed interval may wait in the kernel's cache before it is on disk. A sync costs
/// a disk flush, so it is not done for every line.
const SYNC_EVERY: Duration = Duration::from_secs(2);

/// Room kept on the disk for the journal: a file of this size beside it, given up when the disk
/// is full, so the journal's last intervals and its end still fit when the request log (or
/// anything else) filled the disk first. An interval's line takes about 1 KB a request name.
const RESERVE: usize = 2 << 20;

/// An open journal. A write that fails is kept and reported when the run ends; the run itself
/// goes on, since the load is already on its way and the figures still reach results.json.
#[derive(Debug)]
pub struct Writer {
    path: PathBuf,
    out: File,
    /// Bytes of whole lines written: a line cut short by a full disk is cut back to here.
    len: u64,
    synced: Instant,
    failed: Option<std::io::Error>,
    /// The reserve's file, while it is kept.
    reserve: Option<PathBuf>,
}

impl Writer {
    /// Creates the journal; it must not exist yet (a run never writes over another's files).
    pub fn create(path: &Path) -> Result<Writer> {
        let file = rundir::create_new(path)?;
        let reserve = rundir::reserve_of(path);
        // Without room for a reserve the journal goes on without one.
        let kept = rundir::create_new(&reserve)
            .ok()
            .is_some_and(|mut f| f.write_all(&vec![0; RESERVE]).and_then(|()| f.sync_data()).is_ok());
        if !kept {
            let _ = std::fs::remove_file(&reserve);
        }
        Ok(Writer {
            path: path.to_path_buf(),
            out: file,
            len: 0,
            synced: Instant::now(),
            failed: None,
            reserve: kept.then_some(reserve),
        })
    }

    /// Appends one entry as a line, written to the kernel at once, synced to disk every
    /// [`SYNC_EVERY`]. A line the disk has no room for is cut back, the reserve given up, and
    /// the line written again.
    pub fn write(&mut self, entry: &Entry) {
        if self.failed.is_some() {
            return;
        }
        let mut line = match serde_json::to_vec(entry) {
            Ok(l) => l,
            Err(e) => {
                self.failed = Some(e.into());
                return;
            }
        };
        line.push(b'\n');
        let mut result = self.append(&line, entry);
        if result.is_err() {
            if let Some(reserve) = self.reserve.take() {
                let _ = std::fs::remove_file(reserve);
                result = self.append(&line, entry);
            }
        }
        if let Err(e) = result {
            self.failed = Some(e);
        }
    }

    fn append(&mut self, line: &[u8], entry: &Entry) -> std::io::Result<()> {
        let written = (|| {
            self.out.write_all(line)?;
            if self.synced.elapsed() >= SYNC_EVERY || matches!(entry, Entry::End(_)) {
                self.out.sync_data()?;
                self.synced = Instant::now();
            }
            Ok(())
        })();
        match written {
            Ok(()) => {
                self.len += line.len() as u64;
                Ok(())
            }
            Err(e) => {
                // Whatever part of the line was written goes, so the journal stays whole lines.
                let _ = self.out.set_len(self.len);
                let _ = std::io::Seek::seek(&mut self.out, std::io::SeekFrom::Start(self.len));
                Err(e)
            }
        }
    }

    /// Ends writing; the error of the first write that failed, if one did.
    pub fn finish(mut self) -> Result<PathBuf> {
        if let Some(reserve) = self.reserve.take() {
            let _ = std::fs::remove_file(reserve);
        }
        if let Some(e) = self.failed.take() {
            return Err(e).with_context(|| format!("cannot write {}", self.path.display()));
        }
        self.out
            .sync_data()
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        Ok(self.path.clone())
    }
}

impl Drop for Writer {
    /// A run that failed before its end gives its reserve back too.
    fn drop(&mut self) {
        if let Some(reserve) = self.reserve.take() {
            let _ = std::fs::remove_file(reserve);
        }
    }
}

/// True when the file holds at least one whole line, read no further than its end and never
/// past a results document's size limit (the reader then says what is wrong).
fn has_a_line(path: &Path) -> Result<bool> {
    use std::io::{BufRead, Read};
    let file = crest_model::input::open_file(path).with_context(|| format!("{}: cannot open it", path.display()))?;
    let mut first = Vec::new();
    BufReader::new(file.take(crest_model::input::MAX_RESULTS))
        .read_until(b'\n', &mut first)
        .with_context(|| format!("{}: cannot read it", path.display()))?;
    Ok(first.ends_with(b"\n") || first.len() as u64 == crest_model::input::MAX_RESULTS)
}

/// Reads a journal back; errors name the file.
pub fn read(path: &Path) -> Result<journal::Journal> {
    let file = crest_model::input::open_file(path).with_context(|| format!("{}: cannot open it", path.display()))?;
    journal::read(BufReader::new(file)).with_context(|| format!("{}", path.display()))
}

/// The results document the journals of `dir` add up to, when it has any: for a run killed
/// before it could write results.json. A run of several parts joins its parts' results in
/// order, each as one step.
pub fn rebuild(dir: &Path) -> Result<Option<crest_model::Results>> {
    let mut parts = Vec::new();
    for path in rundir::journals(dir) {
        // A killed run leaves its reserve behind: room kept for a journal that is now read
        // back, so it is given back here (nothing reads it; `--force` removes it too).
        let _ = std::fs::remove_file(crate::rundir::reserve_of(&path));
        // A run killed as a part began leaves that part's journal without a whole first line:
        // nothing of the part was measured, and the parts before it stand.
        if !has_a_line(&path)? {
            eprintln!(
                "{}: cut off before its first line was written; left out",
                path.display()
            );
            continue;
        }
        let j = read(&path)?;
        if j.truncated {
            eprintln!("{}: its last line was cut off and is left out", path.display());
        }
        let label = j.start.part.clone();
        let results = j.results().with_context(|| format!("{}", path.display()))?;
        parts.push((label, results));
    }
    let mut it = parts.into_iter().map(|(label, r)| {
        let label = label.unwrap_or(crest_model::results::Segment {
            setup: None,
            kind: crest_model::step::StepKind::Run,
            start_s: 0.0,
            end_s: 0.0,
            users: None,
            rate: None,
        });
        (label, r)
    });
    let Some(first) = it.next() else { return Ok(None) };
    let rest: Vec<_> = it.collect();
    if rest.is_empty()
        && rundir::journals(dir)
            .first()
            .is_some_and(|p| p.ends_with(rundir::JOURNAL))
    {
        return Ok(Some(checked(first.1, dir)?));
    }
    let unfinished = first.1.ended_by == crest_model::results::EndReason::Unfinished
        || rest
            .iter()
            .any(|(_, r)| r.ended_by == crest_model::results::EndReason::Unfinished);
    let mut joined = crest_model::results::concat(first, rest)?;
    if unfinished {
        joined.ended_by = crest_model::results::EndReason::Unfinished;
    }
    joined.find = read_find(dir)?;
    if let Some(f) = &joined.find {
        joined.config.model = f.model;
    }
    Ok(Some(checked(joined, dir)?))
}

/// Journals are read back after crashes and may have been edited: what they add up to is held
/// to what a results document read from a file is, before any report relies on it.
fn checked(r: crest_model::Results, dir: &Path) -> Result<crest_model::Results> {
    r.check()
        .with_context(|| format!("{}: its journals do not add up to a valid run", dir.display()))?;
    Ok(r)
}

/// Saves a search's record so far.
pub fn write_find(dir: &Path, record: &crest_model::results::FindRecord) -> Result<()> {
    rundir::write_atomic(&dir.join(rundir::FIND), &serde_json::to_vec_pretty(record)?)
}

/// Drops the saved record once results.json holds it.
pub fn remove_find(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(rundir::FIND));
}

fn read_find(dir: &Path) -> Result<Option<crest_model::results::FindRecord>> {
    let path = dir.join(rundir::FIND);
    if !path.is_file() {
        return Ok(None);
    }
    let text = crest_model::input::read_file(&path, crest_model::input::MAX_RESULTS)
        .with_context(|| format!("{}: cannot read it", path.display()))?;
    serde_json::from_slice(&text)
        .map(Some)
        .with_context(|| format!("{}: not a capacity search's record", path.display()))
}
