//! The team store: each run's headline figures, steps, answers and per-second series in
//! PostgreSQL (schema `crest`, docs/store.md), beside its whole results document, from which
//! `crest history` can rebuild it.
//!
//! Every entry point connects on a thread of its own with a runtime of its own, so that a caller
//! inside or outside a tokio runtime may use it alike. The URL is shown only redacted: an error
//! of this crate never carries a password.
#![warn(missing_docs)]

mod connect;
mod migrate;
mod read;
mod rows;
mod write;

pub use connect::{check_url, shown};
pub use migrate::{migrate, MIGRATIONS};
pub use read::load_runs;
pub use write::write_run;

/// The store could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The URL is not a PostgreSQL connection string.
    #[error("store {url}: not a PostgreSQL URL: {message}")]
    Url {
        /// The URL, redacted.
        url: String,
        /// What is wrong with it.
        message: String,
    },
    /// The URL asks for TLS, which crest's connections do not speak.
    #[error("store {url}: sslmode=require: crest connects without TLS; put the store on a trusted network or behind a local TLS tunnel")]
    Tls {
        /// The URL, redacted.
        url: String,
    },
    /// No connection within the timeout, or one refused.
    #[error("store {url}: cannot connect: {message}")]
    Connect {
        /// The URL, redacted.
        url: String,
        /// The driver's or the server's words.
        message: String,
    },
    /// A statement failed.
    #[error("store {url}: {message}")]
    Query {
        /// The URL, redacted.
        url: String,
        /// The server's words.
        message: String,
    },
    /// The store was migrated by a later crest, whose tables this one may misread.
    #[error("store {url}: its schema is at version {found}, later than this crest's {known}; use a later crest")]
    Newer {
        /// The URL, redacted.
        url: String,
        /// The store's version.
        found: i32,
        /// The latest this crest knows.
        known: i32,
    },
    /// A stored results document is not one this crest reads.
    #[error("store {url}, run {id}: its results cannot be read: {message}")]
    Results {
        /// The URL, redacted.
        url: String,
        /// The run's id.
        id: i64,
        /// Why.
        message: String,
    },
}

/// Runs `f` to its end on a thread of its own, with a current-thread runtime: a runtime cannot
/// be blocked on from inside another, and the callers (a run's output, a collector) may be in
/// one. A scoped thread, so that `f` may borrow.
fn on_own_thread<T: Send, F>(shown: &str, f: impl FnOnce() -> F + Send) -> Result<T, StoreError>
where
    F: std::future::Future<Output = Result<T, StoreError>>,
{
    std::thread::scope(|s| {
        let worker = s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| StoreError::Connect {
                    url: shown.to_string(),
                    message: format!("cannot start a runtime: {e}"),
                })?;
            rt.block_on(f())
        });
        match worker.join() {
            Ok(v) => v,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}
