//! What one exchange measures and keeps, whichever protocol carries it: the response kept for
//! extraction and checks, the progress kept when an exchange fails part-way, and how opening its
//! connection went. HTTP/1.1 (`h1`) and HTTP/2 (`http2`) both fill them, so they belong to
//! neither (as hyper keeps its shared types in `proto`).

use std::time::{Duration, Instant};

/// Most response body bytes kept for extraction and checks; the rest is counted, not kept.
pub const MAX_KEPT_BODY: usize = 32 * 1024 * 1024;

/// A response kept for extraction and checks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Header names and values, in order; values that are not UTF-8 are converted lossily.
    pub headers: Vec<(String, String)>,
    /// The body, up to [`MAX_KEPT_BODY`] bytes.
    pub body: Vec<u8>,
    /// True when the body was longer than what was kept.
    pub truncated: bool,
}

impl Response {
    /// The first header with this name, compared without case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn keep(&mut self, bytes: &[u8]) {
        let room = MAX_KEPT_BODY.saturating_sub(self.body.len());
        if bytes.len() > room {
            self.truncated = true;
        }
        self.body.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

/// What one exchange measured so far; kept when it fails part-way.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    pub written: u64,
    pub read: u64,
    pub first_byte: Option<Instant>,
    pub status: Option<u16>,
    /// Held from the first byte written until the exchange ends, so that a run's end counts
    /// the requests it cut off.
    sent: Option<crest_engine::Unanswered>,
}

impl Progress {
    /// `n` more bytes of the request left.
    pub fn wrote(&mut self, n: u64) {
        self.written += n;
        if self.sent.is_none() {
            self.sent = Some(crest_engine::Unanswered::sent());
        }
    }
}

/// How long opening a connection took, by phase.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Opened {
    /// Resolving the host, when this connection did (failed lookups included).
    pub dns: Took,
    /// TCP, the proxy's tunnel and TLS.
    pub connect: Took,
}

/// How long a phase took, once it has: an `Option<Duration>` in 8 bytes rather than 16, as
/// every user's task holds its call's [`Opened`] while it waits (issue 35).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Took(u64);

impl Default for Took {
    fn default() -> Self {
        Took(u64::MAX)
    }
}

impl Took {
    pub fn get(self) -> Option<Duration> {
        (self.0 != u64::MAX).then(|| Duration::from_nanos(self.0))
    }

    /// Records `d` (saturating at 584 years).
    pub fn set(&mut self, d: Duration) {
        self.0 = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX - 1);
    }
}
