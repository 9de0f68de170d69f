//! A run's provenance as the flags give it (`--label`, `--tag`) over a scenario's `label:`, and
//! the git checkout crest runs in, found by asking `git` itself: what `crest history` groups
//! and orders runs by.

use crate::cli::ProvenanceArgs;
use anyhow::{bail, Result};
use crest_model::redact;
use crest_model::results::Provenance;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest a `git` command may take: a hung network file system or a huge checkout must
/// not hold up a run for what is only a note on it.
const GIT_TIMEOUT: Duration = Duration::from_secs(3);

/// Sets the flags' label (it wins over the file's) and tags on `p`, each checked, and the git
/// checkout of the current directory when there is one.
pub fn add(p: &mut Provenance, args: &ProvenanceArgs) -> Result<()> {
    if let Some(label) = &args.label {
        if let Some(problem) = Provenance::label_problem(label) {
            bail!("--label {label:?}: {problem}");
        }
        p.label = Some(label.clone());
    }
    for tag in &args.tags {
        let (key, value) = Provenance::parse_tag(tag).map_err(|m| anyhow::anyhow!("--tag: {m}"))?;
        let shown = if redact::is_secret_name(&key) {
            redact::REDACTED.to_string()
        } else {
            redact::text(&value)
        };
        p.tags.insert(key, shown);
    }
    let git = checkout();
    p.commit = git.commit;
    p.branch = git.branch;
    p.dirty = git.dirty;
    Ok(())
}

/// What git says of the current directory; all None outside a checkout or without git.
#[derive(Default)]
struct Checkout {
    commit: Option<String>,
    branch: Option<String>,
    dirty: Option<bool>,
}

fn checkout() -> Checkout {
    let Some(commit) = git(&["rev-parse", "--verify", "-q", "HEAD"])
        .filter(|c| c.len() >= 40 && c.bytes().all(|b| b.is_ascii_hexdigit()))
    else {
        return Checkout::default();
    };
    Checkout {
        commit: Some(commit),
        // Empty when detached (`symbolic-ref` fails then).
        branch: git(&["symbolic-ref", "--short", "-q", "HEAD"]).filter(|b| !b.is_empty()),
        // Changes to tracked files only: build output left untracked does not change the build.
        // Told by the exit code (1: differences), so no list of files need be read.
        dirty: match run(&["diff", "--quiet", "HEAD", "--"]) {
            Some((0, _)) => Some(false),
            Some((1, _)) => Some(true),
            _ => None,
        },
    }
}

/// The trimmed output of `git ARGS` when it succeeds within [`GIT_TIMEOUT`].
fn git(args: &[&str]) -> Option<String> {
    run(args).and_then(|(code, out)| (code == 0).then_some(out))
}

/// The exit code and trimmed output of `git ARGS`, when it ends within [`GIT_TIMEOUT`].
fn run(args: &[&str]) -> Option<(i32, String)> {
    let mut child = Command::new("git")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let started = Instant::now();
    // Polled rather than waited on, so that a git that hangs is killed at the timeout; its
    // output is a line or a short list, which fits in the pipe until it is read.
    let code = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status.code()?,
            Ok(None) if started.elapsed() < GIT_TIMEOUT => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
    Some((code, out.trim().to_string()))
}
