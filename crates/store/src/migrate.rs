//! The store's schema, versioned: ordered migrations embedded in the binary, each applied in a
//! transaction of its own that holds an advisory lock, so that two crests writing their first
//! run at once apply each migration once, one after the other.

use crate::connect::{connect, shown, Store};
use crate::{on_own_thread, StoreError};

/// Every migration, by version: version `n` is at index `n - 1`. Never edit one that shipped;
/// add the next.
pub const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("../migrations/0001_runs.sql")),
    (2, include_str!("../migrations/0002_dirty_and_branch.sql")),
];

/// The advisory lock every migration holds: one number for crest's store in any database.
const LOCK: i64 = 0x6372_6573_745f_7631; // "crest_v1"

/// Brings the store at `url` to version `up_to` (the latest when `None`), creating the schema
/// in an empty database; returns the version it is at. A store already there, or further, is
/// left as it is; one later than this crest knows is refused.
pub fn migrate(url: &str, up_to: Option<i32>) -> Result<i32, StoreError> {
    on_own_thread(&shown(url), || async move {
        let mut s = connect(url).await?;
        migrate_on(&mut s, up_to).await
    })
}

/// [`migrate`] on an open connection.
pub(crate) async fn migrate_on(s: &mut Store, up_to: Option<i32>) -> Result<i32, StoreError> {
    let latest = MIGRATIONS.len() as i32;
    let target = up_to.unwrap_or(latest).min(latest);
    loop {
        let shown = s.shown.clone();
        let err = |e: tokio_postgres::Error| StoreError::Query {
            url: shown.clone(),
            message: crate::connect::words(&e),
        };
        let tx = s.client.transaction().await.map_err(err)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK])
            .await
            .map_err(err)?;
        // Created only when missing: CREATE SCHEMA IF NOT EXISTS still asks for the right to
        // create one, which a user of an existing store need not have.
        let found: bool = tx
            .query_one("SELECT to_regclass('crest.schema_version') IS NOT NULL", &[])
            .await
            .map_err(err)?
            .get(0);
        if !found {
            tx.batch_execute(
                "CREATE SCHEMA IF NOT EXISTS crest;
                 CREATE TABLE crest.schema_version (
                     version    integer PRIMARY KEY,
                     applied_at timestamptz NOT NULL DEFAULT now()
                 );",
            )
            .await
            .map_err(err)?;
        }
        let at: i32 = tx
            .query_one("SELECT coalesce(max(version), 0) FROM crest.schema_version", &[])
            .await
            .map_err(err)?
            .get(0);
        if at > latest {
            return Err(StoreError::Newer {
                url: s.shown.clone(),
                found: at,
                known: latest,
            });
        }
        if at >= target {
            if target == latest {
                hypertable(&tx).await.map_err(err)?;
            }
            tx.commit().await.map_err(err)?;
            return Ok(at);
        }
        let (version, sql) = MIGRATIONS[at as usize];
        tx.batch_execute(sql).await.map_err(err)?;
        tx.execute("INSERT INTO crest.schema_version (version) VALUES ($1)", &[&version])
            .await
            .map_err(err)?;
        tx.commit().await.map_err(err)?;
    }
}

/// Makes `crest.series` a TimescaleDB hypertable on `at` when the extension is installed in
/// this database (never required, never installed by crest), once.
async fn hypertable(tx: &tokio_postgres::Transaction<'_>) -> Result<(), tokio_postgres::Error> {
    let timescale: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'timescaledb')",
            &[],
        )
        .await?
        .get(0);
    if !timescale {
        return Ok(());
    }
    let done: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM timescaledb_information.hypertables
                            WHERE hypertable_schema = 'crest' AND hypertable_name = 'series')",
            &[],
        )
        .await?
        .get(0);
    if !done {
        tx.batch_execute("SELECT create_hypertable('crest.series', 'at', if_not_exists => TRUE, migrate_data => TRUE)")
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Version n is the nth migration: `migrate_on` finds the next one by index.
    #[test]
    fn migrations_are_numbered_in_order_from_one() {
        for (i, (version, sql)) in MIGRATIONS.iter().enumerate() {
            assert_eq!(*version, i as i32 + 1);
            assert!(!sql.trim().is_empty());
        }
    }
}
