//! The HTTP/1.1 protocol driver.
//!
//! It turns HTTP requests into measured [`crest_model::Sample`]s: connect time (TCP plus TLS)
//! for new connections only, time to the first response byte, total time, bytes on the wire
//! each way, the status, and an [`crest_model::Outcome`] from the closed set. It aggregates
//! nothing; the engine's sink does.
//!
//! Each virtual user owns at most one connection per endpoint (a [`Session`]), rather than
//! sharing a pooled client: a load tool must know exactly which request opened a connection, and
//! must not let a pool hide connection churn or queue requests behind its own limits. The
//! HTTP/1.1 exchange itself is crest's own (`h1`), chosen over hyper's client by measurement
//! (bench/README.md); so is HTTP/2 at one stream per connection (`http2`), while many streams
//! per connection go through the `h2` crate, also by measurement.
#![warn(missing_docs)]

mod call;
mod classify;
mod client;
mod cookies;
mod decode;
mod endpoint;
mod exchange;
mod h1;
mod http2;
mod io;
mod stream;
mod tls;
mod workload;

pub use call::{Call, CallOptions, Exchange, Session};
pub use classify::{h2_crate_error, io_error};
pub use client::Hop;
pub use cookies::CookieJar;
pub use decode::ACCEPT_ENCODING;
pub use endpoint::{build_request, check_header, is_token, Endpoint, InvalidRequest};
pub use exchange::{Response, MAX_KEPT_BODY};
pub use stream::{StreamError, Streaming, Transport};
pub use workload::HttpWorkload;

use crest_model::Outcome;
use h1::H1Error;
use std::fmt;

/// Why a request failed, kept unformatted until a sink asks for an example message.
#[derive(Debug)]
enum Detail {
    Io(std::io::Error),
    H1(H1Error),
    H2(http2::H2Error),
    Text(&'static str),
    /// The proxy answered CONNECT with this status.
    ProxyRefused(u16),
    /// Resolving this host failed; without an error, it resolved to no address.
    Dns(std::sync::Arc<str>, Option<std::io::Error>),
}

impl fmt::Display for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Detail::Io(e) => write!(f, "{e}"),
            Detail::H1(e) => write!(f, "{e}"),
            Detail::H2(e) => write!(f, "{e}"),
            Detail::Text(t) => f.write_str(t),
            Detail::ProxyRefused(status) => write!(f, "the proxy refused the tunnel with status {status}"),
            Detail::Dns(host, Some(e)) => write!(f, "cannot resolve host {host:?}: {e}"),
            Detail::Dns(host, None) => write!(f, "host {host:?} resolved to no address"),
        }
    }
}

struct Failure {
    outcome: Outcome,
    detail: Detail,
}

impl Failure {
    fn io(e: std::io::Error) -> Self {
        Failure {
            outcome: classify::io_error(&e),
            detail: Detail::Io(e),
        }
    }
    fn h2(e: http2::H2Error) -> Self {
        Failure {
            outcome: classify::h2_error(&e),
            detail: Detail::H2(e),
        }
    }
    fn h1(e: H1Error) -> Self {
        Failure {
            outcome: classify::h1_error(&e),
            detail: Detail::H1(e),
        }
    }
}
