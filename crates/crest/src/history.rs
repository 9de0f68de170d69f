//! `crest history`: reads every run under a directory, shows each label's runs over time,
//! writes history.html, and with `--check` runs the regression gate. The figures and the gate
//! are `crest_analysis::history`'s, fed runs already loaded, so any other source of runs can
//! feed them the same way.

use crate::cli::HistoryArgs;
use crate::rundir;
use anyhow::{bail, Context, Result};
use crest_analysis::history::{self, GateOptions, LabelVerdict, Skipped};
use crest_model::results::{Provenance, Results};
use std::path::{Path, PathBuf};

/// How deep under DIR run directories are looked for: `crest-results/<run>`, a sweep's
/// `<sweep>/point-001`, and a level or two of the user's own grouping.
const MAX_DEPTH: usize = 4;

/// Where the runs are read from.
enum Source {
    Dir(PathBuf),
    Store(String),
}

/// `--store`, else a DIR given, else `$CREST_STORE`, else `crest-results`.
fn source(a: &HistoryArgs) -> Source {
    let env_store = || std::env::var("CREST_STORE").ok().filter(|u| !u.is_empty());
    match (&a.store, &a.dir) {
        (Some(url), _) => Source::Store(url.clone()),
        (None, Some(dir)) => Source::Dir(dir.clone()),
        (None, None) => env_store().map_or_else(|| Source::Dir(PathBuf::from("crest-results")), Source::Store),
    }
}

/// `crest history [DIR]`. Returns the exit code.
pub fn command(a: &HistoryArgs) -> Result<u8> {
    let source = source(a);
    if let Source::Dir(dir) = &source {
        if !dir.is_dir() {
            bail!(
                "{}: not a directory (give where the runs are, e.g. crest-results)",
                dir.display()
            );
        }
    }
    if !(a.min_change.is_finite() && a.min_change >= 0.0) {
        bail!("--min-change {}: give a percentage of 0 or more", a.min_change);
    }
    if let Some(label) = &a.label {
        if let Some(problem) = Provenance::label_problem(label) {
            bail!("--label {label:?}: {problem}");
        }
    }
    let baseline_tag = a
        .baseline_tag
        .as_deref()
        .map(|t| Provenance::parse_tag(t).map_err(|m| anyhow::anyhow!("--baseline-tag: {m}")))
        .transpose()?;
    let (runs, skipped) = match &source {
        Source::Dir(dir) => load(dir),
        // The store's error names it without its password.
        Source::Store(url) => (crest_store::load_runs(url, a.label.as_deref())?, Vec::new()),
    };
    let labels: std::collections::BTreeSet<String> = runs
        .iter()
        .map(|(_, r)| {
            r.config
                .provenance
                .as_ref()
                .and_then(|p| p.label.clone())
                .unwrap_or_else(|| history::NO_LABEL.to_string())
        })
        .collect();
    let h = history::history(runs, a.label.as_deref(), skipped);
    // A gate pointed at nothing (a wrong directory, a label misspelt) must not pass a CI job.
    if a.check && h.groups.is_empty() {
        let whence = match &source {
            Source::Dir(dir) => format!("under {}", dir.display()),
            Source::Store(_) => "in the store".to_string(),
        };
        match &a.label {
            Some(l) if !labels.is_empty() => bail!(
                "--check --label {l}: no run {whence} carries that label (the labels found: {})",
                labels.iter().cloned().collect::<Vec<_>>().join(", ")
            ),
            _ => bail!(
                "--check: no runs {whence}{}: nothing to judge",
                if h.skipped.is_empty() {
                    String::new()
                } else {
                    format!(" ({} could not be read)", h.skipped.len())
                }
            ),
        }
    }
    let verdicts = a.check.then(|| {
        history::check(
            &h,
            &GateOptions {
                baseline: a.baseline as usize,
                baseline_tag,
                min_change_pct: a.min_change,
            },
        )
    });
    let text = match a.format.as_str() {
        "json" => crest_report::history::json(&h, verdicts.as_deref())?,
        "markdown" => crest_report::history::markdown(&h),
        _ => crest_report::history::terminal(&h),
    };
    print!("{text}");
    if let (Some(v), false) = (&verdicts, a.format == "json") {
        print!("{}", crest_report::history::check(v));
    }
    let page = a.out.clone().unwrap_or_else(|| match &source {
        Source::Dir(dir) => dir.join("history.html"),
        Source::Store(_) => PathBuf::from("history.html"),
    });
    let html = crest_report::history::html(&h).context("cannot render history.html")?;
    rundir::write_named(&page, html.as_bytes())?;
    eprintln!("wrote {}", page.display());
    let written = verdicts.as_deref().is_none_or(|v| ci_files(v, a));
    let regressed = verdicts.iter().flatten().any(LabelVerdict::regressed);
    Ok(match (regressed, written) {
        (true, _) => crate::exit::REGRESSED,
        (false, false) => crate::exit::NOT_WRITTEN,
        (false, true) => 0,
    })
}

/// Writes `--junit` and appends `--markdown-summary`, as a run does; says on stderr what could
/// not be written, and returns false then. A regression's exit code (5) is the answer a CI job
/// gates on, so it wins over a file not written (4).
fn ci_files(verdicts: &[LabelVerdict], a: &HistoryArgs) -> bool {
    let mut ok = true;
    if let Some(p) = &a.junit {
        let xml = crest_report::junit::suites_xml(&crest_report::history::check_suites(verdicts))
            .context("cannot render the JUnit XML");
        if let Err(e) = xml.and_then(|x| rundir::write_named(p, &x)) {
            eprintln!("error: --junit {}: {e:#}", p.display());
            ok = false;
        }
    }
    if let Some(p) = &a.markdown_summary {
        let md = crest_report::history::check_markdown(verdicts);
        if let Err(e) = crate::output::append(p, md.as_bytes()) {
            eprintln!("error: --markdown-summary {}: {e:#}", p.display());
            ok = false;
        }
    }
    ok
}

/// Every run under `dir`, each named by its directory, and those that could not be read with
/// why.
fn load(dir: &Path) -> (Vec<(String, Results)>, Vec<Skipped>) {
    let mut found = Vec::new();
    run_dirs(dir, 0, &mut found);
    found.sort();
    let mut runs = Vec::new();
    let mut skipped = Vec::new();
    for d in found {
        let source = d.display().to_string();
        match rundir::read_results(&d) {
            Ok(r) => runs.push((source, r)),
            Err(e) => skipped.push(Skipped {
                source,
                reason: format!("{e:#}"),
            }),
        }
    }
    (runs, skipped)
}

/// The run directories under `dir`: those holding results.json. A run directory's own
/// subdirectories are not searched: a sweep's points and a find's probes are in its joined
/// results already, and one test is one run of the history. Symbolic links are not followed.
fn run_dirs(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if dir.join(rundir::RESULTS).is_file() {
        out.push(dir.to_path_buf());
        return;
    }
    if depth >= MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            run_dirs(&e.path(), depth + 1, out);
        }
    }
}
