//! `crest target`: serves the demo target (crates/target) on loopback until interrupted.

use crate::cli::TargetArgs;
use crate::limits;
use anyhow::{bail, Context, Result};

/// The demo target's settings from flags.
fn target_config(a: &TargetArgs) -> Result<crest_demo::Config> {
    let distribution = match a.distribution.as_str() {
        "uniform" => crest_demo::Distribution::Uniform,
        "exponential" => crest_demo::Distribution::Exponential,
        _ => crest_demo::Distribution::Fixed,
    };
    let work = match a.work.as_str() {
        "spin" => crest_demo::Work::Spin,
        _ => crest_demo::Work::Sleep,
    };
    let c = crest_demo::Config {
        workers: a.workers,
        service_time: a.service_time,
        distribution,
        work,
        queue: a.queue,
        timeout: a.server_timeout,
        body_size: a.size,
        leak_fd_every: a.leak_fd_every,
        leak_bytes_per_request: a.leak_bytes,
        pool: a.pool,
        pool_wait: a.pool_wait,
        pool_work: a.pool_work,
        max_plans: a.max_plans,
        max_connections: a.max_connections,
    };
    c.check().map_err(|e| anyhow::anyhow!("--{e}"))?;
    Ok(c)
}

/// Serves the demo target until interrupted.
pub fn command(a: TargetArgs) -> Result<u8> {
    if !a.listen.ip().is_loopback() {
        bail!(
            "--listen {}: the demo target only listens on loopback addresses",
            a.listen
        );
    }
    limits::raise_file_limit()?;
    let config = target_config(&a)?;
    let addr =
        crest_demo::spawn(a.listen, config.clone()).with_context(|| format!("--listen {}: cannot listen", a.listen))?;
    let connections = match config.max_connections {
        Some(n) => format!("; at most {n} connections"),
        None => String::new(),
    };
    eprintln!(
        "demo target on http://{addr}/ ({} workers, {} ms service time {}, queue {}; API pool {} x {:?}{connections}; Ctrl-C stops it)",
        config.workers,
        config.service_time.as_millis(),
        match config.work {
            crest_demo::Work::Spin => "spinning",
            crest_demo::Work::Sleep => "sleeping",
        },
        config.queue,
        config.pool,
        config.pool_work
    );
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r,
            _ = term.recv() => Ok(()),
        }
    })?;
    Ok(0)
}
