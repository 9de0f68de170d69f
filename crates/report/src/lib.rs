//! Renders analysed results. Each format is a module that writes a string or to a writer; none
//! measures or analyses anything itself, and all render from `results.json` and its analysis
//! alone, so `crest report DIR` reproduces every file of a run. No renderer opens a file: they
//! hand [`Rendered`] files to the binary, which writes them safely into the run directory.
#![warn(missing_docs)]

mod chart;
pub mod csv_out;
pub mod fmt;
pub mod history;
pub mod hlog;
pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod study;
pub mod terminal;
pub mod view;

use crest_analysis::compare::Comparison;
use crest_analysis::Analysis;
use crest_model::results::Results;

/// A report could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A template failed.
    #[error("cannot render {0}: {1}")]
    Template(&'static str, minijinja::Error),
    /// A CSV failed.
    #[error("cannot write {0}: {1}")]
    Csv(&'static str, csv_out::CsvError),
    /// A JSON document failed.
    #[error("cannot write {0}: {1}")]
    Json(&'static str, serde_json::Error),
    /// The interval log failed.
    #[error("cannot write latency.hlog")]
    Hlog(#[from] hlog::HlogError),
}

/// A rendered file: its name in the directory and its contents.
#[derive(Debug)]
pub struct Rendered {
    /// The file's name, one of [`RUN_FILES`] for a run.
    pub name: &'static str,
    /// Its contents.
    pub bytes: Vec<u8>,
}

impl Rendered {
    fn new(name: &'static str, bytes: impl Into<Vec<u8>>) -> Self {
        Rendered {
            name,
            bytes: bytes.into(),
        }
    }
}

/// The files a run directory holds besides results.json, in the order [`run_files`] makes them.
pub const RUN_FILES: [&str; 6] = [
    "report.md",
    "report.html",
    "intervals.csv",
    "requests.csv",
    "failures.csv",
    "latency.hlog",
];

/// Every report file of a run, from its results and their analysis.
pub fn run_files(results: &Results, a: &Analysis) -> Result<Vec<Rendered>, ReportError> {
    let [md_name, html_name, intervals, requests, failures, hlog_name] = RUN_FILES;
    let md = markdown::report(results, a).map_err(|e| ReportError::Template(md_name, e))?;
    let page = html::report(results, a).map_err(|e| ReportError::Template(html_name, e))?;
    let csv = |name, f: &dyn Fn(&mut Vec<u8>) -> Result<(), csv_out::CsvError>| {
        let mut buf = Vec::new();
        f(&mut buf).map_err(|e| ReportError::Csv(name, e))?;
        Ok::<_, ReportError>(Rendered::new(name, buf))
    };
    let mut hlog_bytes = Vec::new();
    hlog::write(results, &mut hlog_bytes)?;
    Ok(vec![
        Rendered::new(md_name, md),
        Rendered::new(html_name, page),
        csv(intervals, &|w| csv_out::intervals(results, a, w))?,
        csv(requests, &|w| csv_out::requests(results, a, w))?,
        csv(failures, &|w| csv_out::failures(a, w))?,
        Rendered::new(hlog_name, hlog_bytes),
    ])
}

/// compare.md, compare.html and compare.json, the Markdown first.
pub fn compare_files(c: &Comparison) -> Result<Vec<Rendered>, ReportError> {
    let md = markdown::compare(c).map_err(|e| ReportError::Template("compare.md", e))?;
    let page = html::compare(c).map_err(|e| ReportError::Template("compare.html", e))?;
    let json = serde_json::to_vec_pretty(&json::comparison(c)).map_err(|e| ReportError::Json("compare.json", e))?;
    Ok(vec![
        Rendered::new("compare.md", md),
        Rendered::new("compare.html", page),
        Rendered::new("compare.json", json),
    ])
}

/// study.md, study.html and study.json, the Markdown first.
pub fn study_files(s: &crest_analysis::study::Study) -> Result<Vec<Rendered>, ReportError> {
    let md = study::markdown(s).map_err(|e| ReportError::Template("study.md", e))?;
    let page = study::html(s).map_err(|e| ReportError::Template("study.html", e))?;
    let json = study::json(s).map_err(|e| ReportError::Json("study.json", e))?;
    Ok(vec![
        Rendered::new("study.md", md),
        Rendered::new("study.html", page),
        Rendered::new("study.json", json),
    ])
}
