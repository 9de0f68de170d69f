//! The run directory and what goes into it.

use crate::cli::OutputArgs;
use anyhow::{Context, Result};
use crest_model::results::Results;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Creates the run directory: `--out DIR`, or a fresh `crest-results/<UTC timestamp>`.
pub fn prepare_dir(out: Option<&Path>) -> Result<PathBuf> {
    prepare_named(out, "")
}

/// Like [`prepare_dir`], with a prefix for the default name (`compare-`).
pub fn prepare_named(out: Option<&Path>, prefix: &str) -> Result<PathBuf> {
    let dir = match out {
        Some(d) => d.to_path_buf(),
        None => {
            let base = PathBuf::from("crest-results");
            let stamp = format!("{prefix}{}", chrono::Utc::now().format("%Y%m%dT%H%M%SZ"));
            let mut dir = base.join(&stamp);
            let mut n = 2;
            while dir.exists() {
                dir = base.join(format!("{stamp}-{n}"));
                n += 1;
            }
            dir
        }
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("--out {}: cannot create the directory", dir.display()))?;
    Ok(dir)
}

/// Writes results.json, then the summaries. The results are written first, so that whatever
/// fails later, nothing measured is lost.
pub fn write_all(dir: &Path, results: &Results, out: &OutputArgs) -> Result<crest_analysis::Summary> {
    let path = dir.join("results.json");
    let json = serde_json::to_vec_pretty(results).context("cannot serialise the results")?;
    write_atomic(&path, &json)?;

    // The reports come second: if one fails, results.json is already safe and `crest report`
    // can try again.
    let summary = match crest_report::write_run(dir, results) {
        Ok(analysis) => analysis.summary,
        Err(e) => {
            eprintln!(
                "warning: {e}; results.json is complete, and `crest report {}` retries",
                dir.display()
            );
            crest_analysis::summarize(results).context("cannot summarise the results")?
        }
    };
    let text = crest_report::terminal::render(results, &summary);
    let summary_json = serde_json::to_string_pretty(&summary).context("cannot serialise the summary")?;
    let json_to_stdout = out.summary_json.as_deref() == Some("-");
    if !out.quiet {
        if json_to_stdout {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
    }
    match out.summary_json.as_deref() {
        Some("-") => println!("{summary_json}"),
        Some(p) => {
            write_atomic(Path::new(p), summary_json.as_bytes()).with_context(|| format!("--summary-json {p}"))?
        }
        None => {}
    }
    if !out.quiet {
        eprintln!("\nresults: {}", path.display());
        eprintln!("report:  {}", dir.join("report.html").display());
    }
    Ok(summary)
}

/// Reads a results document from a run directory or a file; errors name the path.
pub fn read_results(path: &Path) -> Result<Results> {
    let file = if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file).with_context(|| format!("{}: cannot read it", file.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}: not a crest results document", file.display()))
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    f.write_all(bytes)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    f.sync_all().ok();
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
