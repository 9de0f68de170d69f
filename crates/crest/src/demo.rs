//! `crest demo`: starts the demo target in-process and finds its capacity, for a first look at
//! what crest reports.

use crate::cli::{self, DemoArgs};
use crate::measure::Readers;
use crate::{find, plan};
use anyhow::{Context, Result};
use std::sync::Arc;
use std::time::Duration;

/// A demo probe's length: long enough for a steady state, short enough for a demo.
const DEMO_PROBE: Duration = Duration::from_secs(4);

/// The most users the demo's search may probe: far beyond the demo target's capacity, so the
/// search ends at the service level or the budget.
const DEMO_MAX_USERS: f64 = 10_000.0;

/// Starts the demo target in-process, finds its capacity, and writes the report.
pub fn command(a: DemoArgs, args: &[String], readers: &Readers) -> Result<u8> {
    crate::output::check_before(&a.output)?;
    let config = crest_demo::Config::default();
    let addr = crest_demo::spawn("127.0.0.1:0".parse()?, config.clone()).context("cannot start the demo target")?;
    let capacity = config.workers as f64 / config.service_time.as_secs_f64();
    if !a.output.quiet {
        eprintln!(
            "demo target on http://{addr}/: {} workers, {} ms service time, so a capacity of {capacity:.0} req/s; \
             finding it (at most {})",
            config.workers,
            config.service_time.as_millis(),
            humantime::format_duration(a.budget)
        );
    }
    let mut base = plan::url_draft(&format!("http://{addr}/"), &demo_request())?;
    crate::provenance::add(&mut base.provenance, &a.output.provenance)?;
    let workload = Arc::new(plan::http_workload(&plan::finish(base.clone())?)?);
    let how = find::Search {
        slo: find::slo(&[])?,
        open: false,
        budget: a.budget,
        probe: DEMO_PROBE,
        max: DEMO_MAX_USERS,
        cap: crest_model::plan::defaults::MAX_IN_FLIGHT,
        slo_text: &[],
    };
    find::search(find::Subject { workload, base }, &how, &a.output, args, readers)
}

/// The demo's request: a GET of the demo target, which answers within its own 5 s timeout.
fn demo_request() -> cli::RequestArgs {
    cli::RequestArgs {
        method: None,
        headers: Vec::new(),
        body: None,
        body_file: None,
        timeout: Some(Duration::from_secs(10)),
        connect_timeout: None,
        no_keepalive: false,
        insecure: false,
        cacert: None,
        http_version: None,
        http2: false,
        max_streams: None,
        proxy: None,
        cert: None,
        key: None,
        resolve: Vec::new(),
        dns_per_connection: false,
    }
}
