//! `sse` steps: a subscription, what ends the reading, and what is taken from the event.

use super::vars::Known;
use super::Cx;
use crate::raw::{self, Sp};
use crest_flow::plan::SseStep;
use std::time::Duration;

/// How long an `sse` step waits for its events unless it says otherwise.
const DEFAULT_SSE_TIMEOUT: Duration = Duration::from_secs(30);

impl Cx<'_> {
    pub(super) fn sse(&mut self, sp: &Sp<raw::Sse>, known: &mut Known) -> Option<SseStep> {
        let e: &raw::Sse = sp;
        let (endpoint, path) = self.destination(e.path.as_ref(), e.url.as_ref(), sp.at(), known)?;
        let headers = self.headers(e.headers.as_ref(), known);
        let timeout = e
            .timeout
            .as_ref()
            .map_or(Some(DEFAULT_SSE_TIMEOUT), |t| self.positive_duration(t, "timeout"));
        let max_gap = e.max_gap.as_ref().and_then(|t| self.positive_duration(t, "max_gap"));
        let until = e.until.as_ref();
        let count = until.and_then(|u| u.count.as_ref()).map_or(1, |c| **c);
        if let Some(c) = until.and_then(|u| u.count.as_ref()).filter(|c| ***c == 0) {
            self.err(c.at(), "sse: `count` must be at least 1", None);
        }
        let matches = until.and_then(|u| u.matches.as_ref()).and_then(|m| {
            regex::Regex::new(m)
                .map_err(|err| self.err(m.at(), format!("sse: `matches` is not a valid regex: {err}"), None))
                .ok()
        });
        let end_ok = match e.on_end.as_ref() {
            None => false,
            Some(v) if v.as_str() == "fail" => false,
            Some(v) if v.as_str() == "success" => true,
            Some(v) => {
                self.err(
                    v.at(),
                    format!("sse: `on_end` is `fail` or `success`, not {:?}", v.as_str()),
                    None,
                );
                false
            }
        };
        let checks = e.check.as_ref().map(|c| self.checks(c)).unwrap_or_default();
        let mut extract = Vec::new();
        for (var, x) in e.extract.iter().flatten() {
            if let Some(x) = self.extractor(var, x) {
                extract.push((var.clone(), x));
            }
        }
        for (var, _) in &extract {
            known.add(var);
        }
        let name = match &e.name {
            Some(n) => n.to_string(),
            None => {
                let shown = path.as_ref().map(|p| p.to_string()).unwrap_or_default();
                format!("SSE {}", shown.split('?').next().unwrap_or(""))
            }
        };
        let reconnect_name = self.name_id(&format!("{name} reconnect"));
        let name = self.name_id(&name);
        Some(SseStep {
            name,
            reconnect_name,
            endpoint: endpoint?,
            path: path?,
            headers,
            event: until.and_then(|u| u.event.as_ref()).map(|v| v.to_string()),
            matches,
            count,
            timeout: timeout?,
            extract,
            checks,
            max_gap,
            reconnects: e.reconnect.as_ref().map_or(0, |r| **r),
            end_ok,
            close: e.close.unwrap_or(false),
        })
    }
}
