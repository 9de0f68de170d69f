//! `crest pg init`: creates and fills pgbench's TPC-B tables for the SQL scenarios.

use crate::cli::PgInitArgs;
use anyhow::{bail, Context, Result};

/// Creates and fills the TPC-B tables.
pub fn init(a: &PgInitArgs) -> Result<u8> {
    if a.scale == 0 || a.scale > 100_000 {
        bail!("--scale {}: give 1 to 100000", a.scale);
    }
    let password = std::env::var("PGPASSWORD").ok();
    let target = crest_pg::PgTarget::parse(&a.url, password.as_deref(), None)
        .with_context(|| format!("URL {}", crest_model::redact::url(&a.url)))?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let started = std::time::Instant::now();
    tokio::task::LocalSet::new().block_on(&rt, async {
        let mut s = target
            .connect()
            .await
            .map_err(|e| anyhow::anyhow!("{}: cannot connect: {e}", target.shown()))?;
        for statement in crest_pg::tpcb_init(a.scale) {
            s.simple(&statement)
                .await
                .map_err(|e| anyhow::anyhow!("{}: {e}", target.shown()))?;
        }
        Ok::<(), anyhow::Error>(())
    })?;
    eprintln!(
        "{}: pgbench tables at scale {} ({} accounts) in {:.1} s",
        target.shown(),
        a.scale,
        a.scale * 100_000,
        started.elapsed().as_secs_f64()
    );
    Ok(0)
}
