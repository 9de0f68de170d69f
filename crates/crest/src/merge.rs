//! `crest merge`: the finished parts of a run that several generators sent at once, as the one
//! run they add up to (see `crest_model::merge`).

use crate::cli::{MergeArgs, OutputArgs};
use crate::{journal, output};
use anyhow::{bail, Context, Result};

/// `crest merge`. Returns the exit code.
pub fn command(a: &MergeArgs) -> Result<u8> {
    let mut parts = Vec::with_capacity(a.parts.len());
    for dir in &a.parts {
        let journals = crate::rundir::journals(dir);
        let [path] = journals.as_slice() else {
            bail!(
                "{}: not one worker's run directory (it needs the journal.jsonl of one run)",
                dir.display()
            );
        };
        let j = journal::read(path)?;
        if j.truncated {
            eprintln!("{}: its last line was cut off and is left out", path.display());
        }
        parts.push(j);
    }
    let results = crest_model::merge::merge(&parts).with_context(|| {
        let named: Vec<String> = a
            .parts
            .iter()
            .enumerate()
            .map(|(k, p)| format!("part {k} is {}", p.display()))
            .collect();
        format!("cannot merge the parts ({})", named.join(", "))
    })?;
    results.check().context("the parts do not add up to a valid run")?;
    let dir = crate::rundir::prepare_dir(a.out.as_deref(), a.force)?;
    let out = OutputArgs {
        out: a.out.clone(),
        summary_json: a.summary_json.clone(),
        quiet: a.quiet,
        strict: false,
        force: a.force,
        log_requests: false,
        store: None,
        web: Default::default(),
        junit: None,
        markdown_summary: None,
        provenance: Default::default(),
    };
    let written = output::write_all(&dir, &results, &out, true, None)?;
    Ok(if written.complete { 0 } else { crate::exit::NOT_WRITTEN })
}
