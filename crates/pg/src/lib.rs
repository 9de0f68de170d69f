//! The PostgreSQL protocol driver.
//!
//! Each virtual user owns one connection (a [`PgSession`]) on which every statement is prepared
//! once and then only executed. Parameters are sent in text format, so that templated values
//! take whatever type the server inferred for `$n` (an `int`, a `timestamp`), as psql and pgbench
//! do. A transaction is timed as one unit and each of its statements on its own. Errors map to
//! outcomes by SQLSTATE, never by message.
#![warn(missing_docs)]

use bytes::BytesMut;
use crest_model::Outcome;
use postgres_types::{Format, IsNull, ToSql, Type};
use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, Instant};
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls, Row, Statement};

/// Where to connect. The password, when given apart from the URL, is never shown.
#[derive(Clone)]
pub struct PgTarget {
    config: tokio_postgres::Config,
    shown: String,
}

impl fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

/// The connection string could not be used.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InvalidTarget(String);

impl PgTarget {
    /// Parses a `postgres://user@host:port/db` URL (or `key=value` string); `password`, when
    /// given, replaces any in the URL.
    pub fn parse(
        url: &str,
        password: Option<&str>,
        statement_timeout: Option<Duration>,
    ) -> Result<Self, InvalidTarget> {
        if url.contains("://") {
            crest_model::address::parse(url, crest_model::address::POSTGRES)
                .map_err(|e| InvalidTarget(e.to_string()))?;
        }
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| InvalidTarget(format!("the database URL is not valid: {e}")))?;
        if let Some(p) = password {
            config.password(p);
        }
        if let Some(t) = statement_timeout {
            config.options(format!("-c statement_timeout={}", t.as_millis()));
        }
        config.application_name("crest");
        Ok(PgTarget {
            config,
            shown: crest_model::redact::url(url),
        })
    }

    /// The target as it may be shown.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Opens a connection; its driver runs on the current thread's local set.
    pub async fn connect(&self) -> Result<PgSession, PgError> {
        let (client, connection) = self.config.connect(NoTls).await.map_err(PgError::from)?;
        tokio::task::spawn_local(async move {
            // Errors surface through the client; here they only end the connection.
            let _ = connection.await;
        });
        Ok(PgSession {
            client,
            prepared: HashMap::new(),
        })
    }
}

/// One user's connection, with its prepared statements.
pub struct PgSession {
    client: Client,
    prepared: HashMap<String, Statement>,
}

impl fmt::Debug for PgSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgSession")
            .field("prepared", &self.prepared.len())
            .finish()
    }
}

/// A failed statement or connection, with its outcome.
#[derive(Debug)]
pub struct PgError {
    /// How it counts.
    pub outcome: Outcome,
    /// The server's or the driver's message.
    pub message: String,
}

impl fmt::Display for PgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<tokio_postgres::Error> for PgError {
    fn from(e: tokio_postgres::Error) -> Self {
        PgError {
            outcome: classify(&e),
            message: message(&e),
        }
    }
}

/// A driver error in words: the server's message and SQLSTATE code, or the driver's error with
/// its causes (a refused connection says why).
pub fn message(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {} ({})", db.severity(), db.message(), db.code().code()),
        None => {
            let mut s = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(x) = src {
                s.push_str(&format!(": {x}"));
                src = x.source();
            }
            s
        }
    }
}

/// Maps an error to an outcome by SQLSTATE, or by the I/O error underneath.
pub fn classify(e: &tokio_postgres::Error) -> Outcome {
    if let Some(code) = e.code() {
        return classify_state(code);
    }
    if e.is_closed() {
        return Outcome::SqlConnectionLost;
    }
    let mut src = std::error::Error::source(e);
    while let Some(x) = src {
        if let Some(io) = x.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                std::io::ErrorKind::ConnectionRefused => Outcome::ConnectRefused,
                std::io::ErrorKind::TimedOut => Outcome::ConnectTimeout,
                _ => Outcome::SqlConnectionLost,
            };
        }
        src = x.source();
    }
    Outcome::SqlError
}

/// Maps a SQLSTATE to an outcome.
pub fn classify_state(code: &SqlState) -> Outcome {
    if *code == SqlState::T_R_SERIALIZATION_FAILURE {
        Outcome::SqlSerialization
    } else if *code == SqlState::T_R_DEADLOCK_DETECTED {
        Outcome::SqlDeadlock
    } else if *code == SqlState::TOO_MANY_CONNECTIONS {
        Outcome::SqlTooManyConnections
    } else if *code == SqlState::QUERY_CANCELED {
        Outcome::SqlStatementTimeout
    } else if code.code().starts_with("08") || *code == SqlState::ADMIN_SHUTDOWN {
        Outcome::SqlConnectionLost
    } else {
        Outcome::SqlError
    }
}

/// A parameter sent as text: the server parses it as the type it inferred for `$n`.
#[derive(Debug)]
struct Text<'a>(&'a str);

impl ToSql for Text<'_> {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(self.0.as_bytes());
        Ok(IsNull::No)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    fn encode_format(&self, _: &Type) -> Format {
        Format::Text
    }

    postgres_types::to_sql_checked!();
}

/// What one statement did.
#[derive(Debug)]
pub struct StatementResult {
    /// How long it took.
    pub took: Duration,
    /// Rows returned (or affected, for statements that return none).
    pub rows: u64,
    /// The rows returned.
    pub returned: Vec<Row>,
}

impl PgSession {
    /// Runs one statement: prepares it on first use on this connection, then executes it.
    pub async fn run(&mut self, sql: &str, params: &[String]) -> Result<StatementResult, PgError> {
        let start = Instant::now();
        let stmt = match self.prepared.get(sql) {
            Some(s) => s.clone(),
            None => {
                let s = self.client.prepare(sql).await?;
                self.prepared.insert(sql.to_string(), s.clone());
                s
            }
        };
        if stmt.params().len() != params.len() {
            return Err(PgError {
                outcome: Outcome::SqlError,
                message: format!(
                    "the statement takes {} parameters, {} given",
                    stmt.params().len(),
                    params.len()
                ),
            });
        }
        let texts: Vec<Text<'_>> = params.iter().map(|p| Text(p)).collect();
        let refs: Vec<&(dyn ToSql + Sync)> = texts.iter().map(|t| t as &(dyn ToSql + Sync)).collect();
        let (rows, returned) = if stmt.columns().is_empty() {
            (self.client.execute(&stmt, &refs).await?, Vec::new())
        } else {
            let r = self.client.query(&stmt, &refs).await?;
            (r.len() as u64, r)
        };
        Ok(StatementResult {
            took: start.elapsed(),
            rows,
            returned,
        })
    }

    /// Runs a statement that takes no parameters and is not prepared (BEGIN, COMMIT, DDL).
    pub async fn simple(&mut self, sql: &str) -> Result<(), PgError> {
        self.client.batch_execute(sql).await.map_err(PgError::from)
    }

    /// True when the connection is gone.
    pub fn is_closed(&self) -> bool {
        self.client.is_closed()
    }
}

/// A value of a returned row as text, for extraction and checks; `None` for NULL or a type
/// crest does not read (cast it to text in the query).
pub fn value(row: &Row, column: &str) -> Result<Option<String>, ValueError> {
    let Some(idx) = row.columns().iter().position(|c| c.name() == column) else {
        return Err(ValueError::NoColumn {
            column: column.to_string(),
            columns: row.columns().iter().map(|c| c.name().to_string()).collect(),
        });
    };
    let ty = row.columns()[idx].type_().clone();
    let get = |r: Result<Option<String>, tokio_postgres::Error>| r.map_err(|e| ValueError::Decode(e.to_string()));
    match ty {
        Type::BOOL => get(row.try_get::<_, Option<bool>>(idx).map(|v| v.map(|b| b.to_string()))),
        Type::INT2 => get(row.try_get::<_, Option<i16>>(idx).map(|v| v.map(|b| b.to_string()))),
        Type::INT4 => get(row.try_get::<_, Option<i32>>(idx).map(|v| v.map(|b| b.to_string()))),
        Type::INT8 => get(row.try_get::<_, Option<i64>>(idx).map(|v| v.map(|b| b.to_string()))),
        Type::FLOAT4 => get(row.try_get::<_, Option<f32>>(idx).map(|v| v.map(|b| b.to_string()))),
        Type::FLOAT8 => get(row.try_get::<_, Option<f64>>(idx).map(|v| v.map(|b| b.to_string()))),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => get(row.try_get::<_, Option<String>>(idx)),
        other => Err(ValueError::Unread {
            column: column.to_string(),
            ty: other.to_string(),
        }),
    }
}

/// Why a returned value cannot be read as text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// The rows have no such column.
    #[error("no column {column:?}; the columns are {}", columns.join(", "))]
    NoColumn {
        /// The column asked for.
        column: String,
        /// The columns the rows have.
        columns: Vec<String>,
    },
    /// A type crest does not read: the query should cast it.
    #[error("column {column:?} has type {ty}; cast it to text in the query (`{column}::text`)")]
    Unread {
        /// The column.
        column: String,
        /// Its PostgreSQL type.
        ty: String,
    },
    /// The driver could not decode the value.
    #[error("{0}")]
    Decode(String),
}

/// The statements that create and fill pgbench's TPC-B tables at a scale factor: `scale`
/// branches, 10 tellers and 100,000 accounts per branch, as `pgbench -i -s scale` does.
pub fn tpcb_init(scale: u64) -> Vec<String> {
    // One statement at a time: VACUUM cannot run inside the implicit transaction of a batch.
    format!(
        "DROP TABLE IF EXISTS pgbench_history, pgbench_tellers, pgbench_accounts, pgbench_branches;
CREATE TABLE pgbench_branches (bid int NOT NULL, bbalance int, filler char(88)) WITH (fillfactor = 100);
CREATE TABLE pgbench_tellers (tid int NOT NULL, bid int, tbalance int, filler char(84)) WITH (fillfactor = 100);
CREATE TABLE pgbench_accounts (aid int NOT NULL, bid int, abalance int, filler char(84)) WITH (fillfactor = 100);
CREATE TABLE pgbench_history (tid int, bid int, aid int, delta int, mtime timestamp, filler char(22));
INSERT INTO pgbench_branches SELECT b, 0, '' FROM generate_series(1, {scale}) b;
INSERT INTO pgbench_tellers SELECT t, (t - 1) / 10 + 1, 0, '' FROM generate_series(1, {tellers}) t;
INSERT INTO pgbench_accounts SELECT a, (a - 1) / 100000 + 1, 0, '' FROM generate_series(1, {accounts}) a;
ALTER TABLE pgbench_branches ADD PRIMARY KEY (bid);
ALTER TABLE pgbench_tellers ADD PRIMARY KEY (tid);
ALTER TABLE pgbench_accounts ADD PRIMARY KEY (aid);
VACUUM ANALYZE pgbench_branches, pgbench_tellers, pgbench_accounts, pgbench_history;",
        tellers = scale * 10,
        accounts = scale * 100_000
    )
    .split(";\n")
    .map(|s| s.trim().trim_end_matches(';').to_string())
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlstates_map_to_outcomes() {
        assert_eq!(
            classify_state(&SqlState::T_R_SERIALIZATION_FAILURE),
            Outcome::SqlSerialization
        );
        assert_eq!(classify_state(&SqlState::T_R_DEADLOCK_DETECTED), Outcome::SqlDeadlock);
        assert_eq!(
            classify_state(&SqlState::TOO_MANY_CONNECTIONS),
            Outcome::SqlTooManyConnections
        );
        assert_eq!(classify_state(&SqlState::QUERY_CANCELED), Outcome::SqlStatementTimeout);
        assert_eq!(
            classify_state(&SqlState::CONNECTION_FAILURE),
            Outcome::SqlConnectionLost
        );
        assert_eq!(classify_state(&SqlState::UNDEFINED_TABLE), Outcome::SqlError);
    }

    #[test]
    fn passwords_are_not_shown() {
        let t = PgTarget::parse("postgres://bob:hunter2@127.0.0.1:5432/db", None, None).unwrap();
        assert!(!format!("{t:?}").contains("hunter2"));
        assert!(PgTarget::parse("not a url ::: ", None, None).is_err());
    }
}
