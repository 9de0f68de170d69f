//! PostgreSQL's own view of the load: connections by state and transactions per second, from
//! `pg_stat_activity` and `pg_stat_database`.
//!
//! Everything is read in one statement, so the monitor adds exactly one transaction per sample
//! to the counters it reads, and subtracts it again. The monitor's own connection is left out
//! of the connection counts.

use crate::error::{MonitorError, SampleError};
use crate::store::Reading;
use crest_model::monitor::{PostgresSpec, SeriesKey, Unit};
use crest_pg::{PgSession, PgTarget};
use std::collections::BTreeMap;
use std::time::Instant;

const QUERY: &str = "\
SELECT
  (SELECT coalesce(json_object_agg(state, n), '{}')::text FROM (
     SELECT coalesce(state, 'unknown') AS state, count(*) AS n FROM pg_stat_activity
     WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() GROUP BY 1) s) AS states,
  (SELECT (xact_commit + xact_rollback)::text FROM pg_stat_database WHERE datname = current_database()) AS xacts,
  (SELECT xact_rollback::text FROM pg_stat_database WHERE datname = current_database()) AS rollbacks,
  pg_database_size(current_database())::text AS size,
  current_setting('max_connections') AS max_connections";

/// States always recorded, so their series have no gaps when nobody is in them.
const STATES: [&str; 3] = ["active", "idle", "idle in transaction"];

/// One server being watched.
#[derive(Debug)]
pub(crate) struct Watched {
    target: PgTarget,
    session: Option<PgSession>,
    extra: Vec<(String, String)>,
    /// Transactions and rollbacks at the last sample, and when.
    last: Option<(f64, f64, Instant)>,
}

impl Watched {
    pub(crate) fn new(spec: &PostgresSpec, extra: Vec<(String, String)>) -> Result<Self, MonitorError> {
        let target = PgTarget::parse(&spec.url, spec.password.as_deref(), None)
            .map_err(|e| MonitorError::Address(e.to_string()))?;
        Ok(Watched {
            target,
            session: None,
            extra,
            last: None,
        })
    }

    /// The URL as it may be shown.
    pub(crate) fn shown(&self) -> &str {
        self.target.shown()
    }

    pub(crate) async fn sample(&mut self) -> Result<Vec<Reading>, SampleError> {
        if self.session.as_ref().is_none_or(PgSession::is_closed) {
            self.session = Some(self.target.connect().await.map_err(SampleError::Database)?);
            self.last = None;
        }
        let Some(session) = self.session.as_mut() else {
            return Err(SampleError::Internal("no connection"));
        };
        let result = session.run(QUERY, &[]).await.map_err(SampleError::Database)?;
        let row = result.returned.first().ok_or(SampleError::NoRow)?;
        let text = |c: &str| crest_pg::value(row, c).ok().flatten().unwrap_or_default();
        let number = |c: &str| text(c).parse::<f64>().ok();
        let now = Instant::now();
        let key = |m: &str| {
            let mut k = SeriesKey::new(m);
            k.labels.extend(self.extra.iter().cloned());
            k
        };
        let mut out = Vec::new();

        let states: BTreeMap<String, f64> = serde_json::from_str(&text("states")).unwrap_or_default();
        let max_connections = number("max_connections");
        out.push(Reading {
            key: key("pg_connections").with("state", "all"),
            title: "PostgreSQL connections".into(),
            unit: Unit::Count,
            limit: max_connections,
            value: states.values().sum(),
        });
        for state in STATES.iter().map(|s| s.to_string()).chain(states.keys().cloned()) {
            let k = key("pg_connections").with("state", &state);
            if out.iter().any(|r| r.key == k) {
                continue;
            }
            out.push(Reading {
                title: format!("PostgreSQL connections {state}"),
                key: k,
                unit: Unit::Count,
                limit: None,
                value: states.get(&state).copied().unwrap_or(0.0),
            });
        }
        if let Some(size) = number("size") {
            out.push(Reading {
                key: key("pg_database_size_bytes"),
                title: "database size".into(),
                unit: Unit::Bytes,
                limit: None,
                value: size,
            });
        }
        if let (Some(xacts), Some(rollbacks)) = (number("xacts"), number("rollbacks")) {
            if let Some((x0, r0, at)) = self.last.replace((xacts, rollbacks, now)) {
                let dt = now.duration_since(at).as_secs_f64();
                if dt > 0.0 && xacts >= x0 {
                    // The previous sample's own statement is one of the transactions counted.
                    out.push(Reading {
                        key: key("pg_tps"),
                        title: "PostgreSQL transactions per second".into(),
                        unit: Unit::PerSecond,
                        limit: None,
                        value: (xacts - x0 - 1.0).max(0.0) / dt,
                    });
                    out.push(Reading {
                        key: key("pg_rollbacks_per_second"),
                        title: "PostgreSQL rollbacks per second".into(),
                        unit: Unit::PerSecond,
                        limit: None,
                        value: (rollbacks - r0).max(0.0) / dt,
                    });
                }
            }
        }
        Ok(out)
    }
}
