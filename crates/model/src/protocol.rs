//! How HTTP requests are spoken: the version and the client features a plan turns on.
//!
//! Kept apart from the plan types so that quick mode and scenarios share one description, and
//! the HTTP driver reads the same options whichever front end produced them.

use std::fmt;
use std::str::FromStr;

/// Which HTTP version requests use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HttpVersion {
    /// HTTP/1.1, one request at a time per connection.
    #[default]
    Http1,
    /// HTTP/2: over TLS negotiated with ALPN, over cleartext with prior knowledge.
    Http2,
    /// HTTP/2 when the TLS server picks `h2` in ALPN, HTTP/1.1 otherwise (and on cleartext).
    Auto,
}

impl HttpVersion {
    /// The names a scenario or flag uses, in order.
    pub const NAMES: [&'static str; 3] = ["1.1", "2", "auto"];
}

impl fmt::Display for HttpVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HttpVersion::Http1 => "1.1",
            HttpVersion::Http2 => "2",
            HttpVersion::Auto => "auto",
        })
    }
}

/// The text named no HTTP version.
#[derive(Debug, thiserror::Error)]
#[error("unknown HTTP version {0:?} (expected 1.1, 2 or auto)")]
pub struct UnknownVersion(String);

impl FromStr for HttpVersion {
    type Err = UnknownVersion;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "1" | "1.1" => Ok(HttpVersion::Http1),
            "2" => Ok(HttpVersion::Http2),
            "auto" => Ok(HttpVersion::Auto),
            _ => Err(UnknownVersion(s.to_string())),
        }
    }
}

/// HTTP client behaviour for one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpOptions {
    /// The version spoken.
    pub version: HttpVersion,
    /// HTTP/2: most virtual users sharing one connection, each with one stream in flight.
    pub max_streams: u32,
    /// Redirects followed per request (0: none; the 3xx response is the result).
    pub max_redirects: u32,
    /// Send `Accept-Encoding: gzip, deflate, br` and decode what comes back.
    pub compression: bool,
    /// Keep cookies per virtual user and send them back.
    pub cookies: bool,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            version: HttpVersion::Http1,
            max_streams: 100,
            max_redirects: 0,
            compression: false,
            cookies: false,
        }
    }
}
