//! What a step of a message stream (server-sent events, WebSocket, gRPC) takes from the message
//! that ended its reading: the message is read as a response body, so flow's extractors and checks
//! apply to it unchanged.

use super::{Failed, FlowUser};
use crate::extract::{Check, Extractor, LazyJson};
use crest_engine::Ctx;
use crest_http::Response;
use crest_model::{NameId, Outcome};
use std::time::{Duration, Instant};

/// Why a step of a message stream failed: its outcome and the message that says why.
pub(super) type StepError = (Outcome, String);

/// What a step of a message stream measured, for its one sample.
#[derive(Debug, Default)]
pub(super) struct Measured {
    /// Opening its connection (TCP, TLS), when it opened one.
    pub(super) connect: Option<Duration>,
    /// To the first answer (the upgrade's, the first event), when it had one.
    pub(super) ttfb: Option<Duration>,
    /// The HTTP status its connection was opened with.
    pub(super) status: Option<u16>,
    /// Messages sent and read.
    pub(super) sent: u64,
    pub(super) received: u64,
    /// Bytes sent and read.
    pub(super) bytes_sent: u64,
    pub(super) bytes_received: u64,
}

/// Records a stream step's sample, from its intended start to `done`, and says whether the
/// step failed.
pub(super) fn record(
    ctx: &Ctx<'_>,
    name: NameId,
    (intended, started, done): (Instant, Instant, Instant),
    m: &Measured,
    result: Result<(), StepError>,
) -> Result<(), Failed> {
    let (outcome, message) = match result {
        Ok(()) => (Outcome::Success, None),
        Err((o, m)) => (o, Some(m)),
    };
    let sample = crest_model::Sample {
        name,
        segment: 0,
        user: 0,
        iteration: 0,
        intended: ctx.offset(intended),
        send_lag: started - intended,
        dns: None,
        connect: m.connect,
        ttfb: m.ttfb,
        total: done.saturating_duration_since(intended),
        bytes_sent: m.bytes_sent,
        bytes_received: m.bytes_received,
        messages_sent: m.sent,
        messages_received: m.received,
        status: m.status,
        outcome,
    };
    ctx.record(sample, message.as_ref().map(|m| m as &dyn std::fmt::Display));
    if outcome.is_success() {
        Ok(())
    } else {
        Err(Failed::default())
    }
}

/// Runs `checks`, then `extract`, on a message: its bytes are the body and `headers` gives what
/// `header:` extractors and checks read (an event's type and id). A failure is `check_failed`
/// with what did not hold.
pub(super) fn take(
    checks: &[Check],
    extract: &[(String, Extractor)],
    user: &mut FlowUser,
    body: &[u8],
    headers: impl FnOnce() -> Vec<(String, String)>,
) -> Result<(), (Outcome, String)> {
    if checks.is_empty() && extract.is_empty() {
        return Ok(());
    }
    let response = Response {
        status: 200,
        headers: headers(),
        body: body.to_vec(),
        truncated: false,
    };
    let mut json = LazyJson::default();
    for c in checks {
        c.check(&response, Duration::ZERO, &mut json)
            .map_err(|m| (Outcome::CheckFailed, format!("check: {m}")))?;
    }
    for (var, e) in extract {
        let v = e
            .extract(&response, &mut json)
            .map_err(|m| (Outcome::CheckFailed, format!("extract {var}: {m}")))?;
        user.vars.insert(var.clone(), v);
    }
    Ok(())
}
