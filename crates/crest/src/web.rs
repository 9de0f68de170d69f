//! `--web`: this process's runs on a live page, steered through its API (crates/live).
//!
//! One listener per process: a search or a sweep shows its probes or points one after another
//! on the same page.

use crate::cli::WebArgs;
use anyhow::{Context, Result};
use crest_live::{Ended, Hub};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Starts the listener when `--web` was given and prints its URL, even with --quiet: without
/// it the page cannot be opened. Returns the page's hub, for the runs to publish to.
pub fn start(args: &WebArgs) -> Result<Option<Arc<Hub>>> {
    let Some(addr) = args.web else {
        if args.load.is_some() {
            anyhow::bail!("--load manual: the run waits for its live page to set the users; give --web to serve it");
        }
        return Ok(None);
    };
    let token = match args
        .web_token
        .clone()
        .or_else(|| std::env::var("CREST_WEB_TOKEN").ok())
        .filter(|t| !t.trim().is_empty())
    {
        Some(t) => t.trim().to_string(),
        None => crest_live::new_token().context("cannot make a token for --web")?,
    };
    let hub = Arc::new(Hub::new());
    let server = crest_live::serve(addr, token, Arc::clone(&hub)).context("--web")?;
    eprintln!("web: {}", server.url());
    Ok(Some(hub))
}

/// The run ended and its files are in `dir`: the page shows its report. Waits a little for a
/// page that is open to read it, as the process is about to end.
pub fn ended(hub: &Hub, dir: &Path, reason: String) {
    hub.finish(Ended {
        reason,
        dir: Some(dir.display().to_string()),
        summary: std::fs::read_to_string(dir.join("report.md")).ok(),
        report_html: std::fs::read_to_string(dir.join("report.html")).ok(),
    });
    if !hub.watched() {
        return;
    }
    let until = Instant::now() + Duration::from_secs(3);
    while !hub.end_seen() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    // A last scrape of /metrics or a look at the API right after the page saw the end.
    std::thread::sleep(Duration::from_millis(500));
}
