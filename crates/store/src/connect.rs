//! Connecting to the store: the URL parsed as `crest pg` and `--monitor-postgres` parse it
//! (tokio-postgres, no TLS), the password from PGPASSWORD when the URL has none, and a bounded
//! wait, so that an unreachable store delays a finished run by seconds at most.

use crate::StoreError;
use std::time::Duration;
use tokio_postgres::{Client, NoTls};

/// How long a connection may take before the store counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest any one statement may take (a lock held elsewhere, a server stalled): a finished
/// run waits for the store a bounded time.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(60);

/// A connection and the URL as it may be shown.
pub(crate) struct Store {
    pub client: Client,
    pub shown: String,
}

impl Store {
    /// A failed statement as an error that names the store, redacted.
    pub fn query_error(&self, e: &tokio_postgres::Error) -> StoreError {
        StoreError::Query {
            url: self.shown.clone(),
            message: words(e),
        }
    }
}

/// The store's URL (or `key=value` connection string) as it may be shown: without its
/// password.
pub fn shown(url: &str) -> String {
    if url.contains("://") {
        crest_model::redact::url(url)
    } else {
        crest_model::redact::text(url)
    }
}

/// Connects; the connection's driver runs on the current runtime.
pub(crate) async fn connect(url: &str) -> Result<Store, StoreError> {
    let shown = shown(url);
    let mut config = config(url)?;
    if config.get_password().is_none() {
        if let Ok(p) = std::env::var("PGPASSWORD") {
            config.password(p);
        }
    }
    config.application_name("crest");
    config.connect_timeout(CONNECT_TIMEOUT);
    if config.get_options().is_none() {
        config.options(format!("-c statement_timeout={}", STATEMENT_TIMEOUT.as_millis()));
    }
    let connecting = tokio::time::timeout(CONNECT_TIMEOUT, config.connect(NoTls));
    let (client, connection) = match connecting.await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            return Err(StoreError::Connect {
                url: shown,
                message: words(&e),
            })
        }
        Err(_) => {
            return Err(StoreError::Connect {
                url: shown,
                message: format!("no answer in {} s", CONNECT_TIMEOUT.as_secs()),
            })
        }
    };
    tokio::spawn(async move {
        // Its errors surface through the client; here they only end the connection.
        let _ = connection.await;
    });
    Ok(Store { client, shown })
}

/// The URL as a connection's configuration, or why it cannot be one: said before a run sends
/// anything (see [`check_url`]), not after it.
fn config(url: &str) -> Result<tokio_postgres::Config, StoreError> {
    let shown = shown(url);
    // The parser's message is kept out: it may quote the string, password and all.
    let config: tokio_postgres::Config = url.parse().map_err(|_| StoreError::Url {
        url: shown.clone(),
        message: "expected postgres://user@host:port/database or key=value pairs".into(),
    })?;
    if config.get_ssl_mode() == tokio_postgres::config::SslMode::Require {
        return Err(StoreError::Tls { url: shown });
    }
    Ok(config)
}

/// Whether `url` can name a store at all (its form, its `sslmode`), without connecting: a run
/// checks it before sending, so a mistyped `--store` does not cost the run.
pub fn check_url(url: &str) -> Result<(), StoreError> {
    config(url).map(|_| ())
}

/// The server's message and code, or the driver's error with its causes, as `crest pg` words
/// them.
pub(crate) fn words(e: &tokio_postgres::Error) -> String {
    crest_pg::message(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_is_shown_without_its_password_in_either_form() {
        for url in [
            "postgres://u:secretpw@db.internal:5432/perf",
            "host=db.internal user=u password=secretpw dbname=perf",
        ] {
            let s = shown(url);
            assert!(!s.contains("secretpw"), "{s}");
            assert!(s.contains("db.internal"), "{s}");
        }
    }
}
