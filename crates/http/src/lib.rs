//! The HTTP/1.1 protocol driver.
//!
//! It turns one HTTP request into a measured [`crest_model::Sample`]: connect time (TCP plus
//! TLS) for new connections only, time to the first response byte, total time, bytes on the wire
//! each way, the status, and an [`crest_model::Outcome`] from the closed set. It aggregates
//! nothing; the engine's sink does.
//!
//! Each virtual user owns at most one connection, rather than sharing a pooled client: a load
//! tool must know exactly which request opened a connection, and must not let a pool hide
//! connection churn or queue requests behind its own limits. The HTTP/1.1 exchange itself is
//! crest's own ([`h1`]), chosen over hyper's client by measurement (bench/README.md).
#![warn(missing_docs)]

mod classify;
mod h1;
mod io;
mod tls;
mod workload;

pub use workload::{HttpUser, HttpWorkload, InvalidRequest};
