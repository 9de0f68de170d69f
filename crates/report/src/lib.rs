//! Renders analysed results. Each format is a module that writes a string or to a writer; none
//! measures or analyses anything itself, and all render from `results.json` alone, so
//! `crest report DIR` reproduces every file of a run.
#![warn(missing_docs)]

mod chart;
pub mod csv_out;
pub mod fmt;
pub mod hlog;
pub mod html;
pub mod json;
pub mod markdown;
pub mod study;
pub mod terminal;
pub mod view;

use crest_analysis::compare::Comparison;
use crest_analysis::Analysis;
use crest_model::results::Results;
use std::path::{Path, PathBuf};

/// A report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A template failed.
    #[error("cannot render {0}: {1}")]
    Template(&'static str, minijinja::Error),
    /// A CSV failed.
    #[error("cannot write {0}: {1}")]
    Csv(&'static str, csv_out::CsvError),
    /// Writing a file failed.
    #[error("cannot write {0}: {1}")]
    Io(PathBuf, std::io::Error),
    /// The interval log failed.
    #[error("cannot write latency.hlog")]
    Hlog(#[from] hlog::HlogError),
}

/// Writes a report file afresh: an old one is removed first (a link is removed, never
/// followed) and the new one created exclusively, so a link planted in a run directory cannot
/// redirect a write elsewhere.
fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), ReportError> {
    use std::io::Write;
    let path = dir.join(name);
    // Written beside and renamed into place: a full disk leaves the earlier file or none,
    // never a truncated one under the final name.
    let tmp = dir.join(format!("{name}.tmp"));
    let result = match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
            .and_then(|()| std::fs::rename(&tmp, &path)),
    };
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        ReportError::Io(path, e)
    })
}

/// The files a run directory holds besides results.json.
pub const RUN_FILES: [&str; 6] = [
    "report.md",
    "report.html",
    "intervals.csv",
    "requests.csv",
    "failures.csv",
    "latency.hlog",
];

/// Writes every report file of a run into `dir`, from its results and their analysis.
pub fn write_run(dir: &Path, results: &Results, a: &Analysis) -> Result<(), ReportError> {
    let md = markdown::report(results, a).map_err(|e| ReportError::Template("report.md", e))?;
    write(dir, "report.md", md.as_bytes())?;
    let page = html::report(results, a).map_err(|e| ReportError::Template("report.html", e))?;
    write(dir, "report.html", page.as_bytes())?;
    let mut buf = Vec::new();
    csv_out::intervals(results, a, &mut buf).map_err(|e| ReportError::Csv("intervals.csv", e))?;
    write(dir, "intervals.csv", &buf)?;
    buf.clear();
    csv_out::requests(results, a, &mut buf).map_err(|e| ReportError::Csv("requests.csv", e))?;
    write(dir, "requests.csv", &buf)?;
    buf.clear();
    csv_out::failures(a, &mut buf).map_err(|e| ReportError::Csv("failures.csv", e))?;
    write(dir, "failures.csv", &buf)?;
    buf.clear();
    hlog::write(results, &mut buf)?;
    write(dir, "latency.hlog", &buf)?;
    Ok(())
}

/// Writes compare.md, compare.html and compare.json into `dir`; returns the Markdown.
pub fn write_compare(dir: &Path, c: &Comparison) -> Result<String, ReportError> {
    let md = markdown::compare(c).map_err(|e| ReportError::Template("compare.md", e))?;
    write(dir, "compare.md", md.as_bytes())?;
    let page = html::compare(c).map_err(|e| ReportError::Template("compare.html", e))?;
    write(dir, "compare.html", page.as_bytes())?;
    let json = serde_json::to_vec_pretty(&json::comparison(c))
        .map_err(|e| ReportError::Io(dir.join("compare.json"), e.into()))?;
    write(dir, "compare.json", &json)?;
    Ok(md)
}

/// Writes study.md, study.html and study.json into `dir`; returns the Markdown.
pub fn write_study(dir: &Path, s: &crest_analysis::study::Study) -> Result<String, ReportError> {
    let md = study::markdown(s).map_err(|e| ReportError::Template("study.md", e))?;
    write(dir, "study.md", md.as_bytes())?;
    let page = study::html(s).map_err(|e| ReportError::Template("study.html", e))?;
    write(dir, "study.html", page.as_bytes())?;
    let json = study::json(s).map_err(|e| ReportError::Io(dir.join("study.json"), e.into()))?;
    write(dir, "study.json", json.as_bytes())?;
    Ok(md)
}
