//! The validated plan: everything the engine needs to know, and nothing about where it came from.
//!
//! Command-line flags (and, later, scenario files) are resolved into a [`Plan`]. The load model
//! and the stop rule are independent values, so one executor serves every combination of them.

use std::time::Duration;

/// A validated run, ready for the engine.
#[derive(Clone, Debug)]
pub struct Plan {
    /// How load is generated.
    pub load: LoadModel,
    /// When the run ends (whichever comes first).
    pub stop: StopRule,
    /// Names that statistics are grouped under; samples refer to them by index.
    pub names: Vec<String>,
    /// Engine threads (each a single-threaded event loop). Defaults to the number of cores.
    pub threads: usize,
    /// How long requests still in flight may finish after sending stops.
    pub grace: Duration,
    /// What is sent.
    pub target: Target,
}

/// How load is generated.
#[derive(Clone, Debug, PartialEq)]
pub enum LoadModel {
    /// A fixed number of virtual users, each sending its next request when the last one ends.
    Closed {
        /// Number of concurrent users.
        users: u64,
    },
    /// Requests arrive on a fixed schedule, whatever the target's latency.
    Open {
        /// Arrivals per second.
        rate: f64,
        /// The most requests in flight at once; arrivals beyond it are dropped and counted.
        max_in_flight: u64,
    },
}

impl LoadModel {
    /// The most connections this model can hold open at once.
    pub fn max_concurrency(&self) -> u64 {
        match *self {
            LoadModel::Closed { users } => users,
            LoadModel::Open { max_in_flight, .. } => max_in_flight,
        }
    }
}

/// When a run ends; the first limit reached wins. With neither, it runs until interrupted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StopRule {
    /// Stop after this many requests (arrivals, in the open model) have been started.
    pub requests: Option<u64>,
    /// Stop sending after this long.
    pub duration: Option<Duration>,
}

/// What the run sends.
#[derive(Clone, Debug)]
pub enum Target {
    /// One HTTP request, repeated.
    Http(HttpRequest),
}

/// One HTTP request, repeated for the whole run.
#[derive(Clone, Debug)]
pub struct HttpRequest {
    /// The method, e.g. `GET`.
    pub method: String,
    /// The absolute URL (`http` or `https`).
    pub url: String,
    /// Extra headers, in order. Values may be secrets: redact before showing them.
    pub headers: Vec<(String, String)>,
    /// The request body, possibly empty.
    pub body: Vec<u8>,
    /// Limit on one request, from its start until the response body is complete.
    pub timeout: Duration,
    /// Limit on establishing a connection.
    pub connect_timeout: Duration,
    /// Reuse connections between requests.
    pub keepalive: bool,
    /// How the server's certificate is checked.
    pub tls: TlsOptions,
}

/// How TLS servers are verified.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    /// Accept any certificate (self-signed test servers).
    pub insecure: bool,
    /// PEM bytes of extra trusted CA certificates.
    pub ca_pem: Option<Vec<u8>>,
}
