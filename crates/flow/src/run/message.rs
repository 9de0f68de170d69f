//! What a step of a message stream (server-sent events, WebSocket) takes from the message that
//! ended its reading: the message is read as a response body, so flow's extractors and checks
//! apply to it unchanged.

use super::FlowUser;
use crate::extract::{Check, Extractor, LazyJson};
use crest_http::Response;
use crest_model::Outcome;
use std::time::Duration;

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
