//! Reading runs back: each rebuilt from its stored results document, the one source the
//! headline columns were taken from.

use crate::connect::{connect, shown};
use crate::{on_own_thread, StoreError};
use crest_model::results::Results;

/// Every run in the store at `url` (only those labelled `label`, when given), oldest first,
/// each with where it came from (`store run 17`) and its results. An empty or unmigrated store
/// has no runs; nothing is migrated.
pub fn load_runs(url: &str, label: Option<&str>) -> Result<Vec<(String, Results)>, StoreError> {
    on_own_thread(&shown(url), || async {
        let s = connect(url).await?;
        let err = |e: tokio_postgres::Error| s.query_error(&e);
        let exists: bool = s
            .client
            .query_one("SELECT to_regclass('crest.runs') IS NOT NULL", &[])
            .await
            .map_err(err)?
            .get(0);
        if !exists {
            return Ok(Vec::new());
        }
        let rows = s
            .client
            .query(
                "SELECT id, results::text FROM crest.runs
                 WHERE $1::text IS NULL OR label = $1
                 ORDER BY started_at, id",
                &[&label],
            )
            .await
            .map_err(err)?;
        rows.iter()
            .map(|row| {
                let id: i64 = row.get(0);
                let text: String = row.get(1);
                let results = crest_model::results::parse(&text).map_err(|e| StoreError::Results {
                    url: s.shown.clone(),
                    id,
                    message: e.to_string(),
                })?;
                Ok((format!("store run {id}"), results))
            })
            .collect()
    })
}
