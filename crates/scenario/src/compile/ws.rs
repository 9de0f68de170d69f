//! `ws` steps: where the connection goes, what is sent, what ends the reading, what is taken.

use super::vars::Known;
use super::Cx;
use crate::raw::{self, Sp};
use crest_flow::plan::WsStep;
use std::time::Duration;

/// How long a `ws` step waits for its connection and messages unless it says otherwise.
const DEFAULT_WS_TIMEOUT: Duration = Duration::from_secs(30);

impl Cx<'_> {
    pub(super) fn ws(&mut self, sp: &Sp<raw::Ws>, known: &mut Known) -> Option<WsStep> {
        let w: &raw::Ws = sp;
        if let Some(u) = w.url.as_ref() {
            let scheme = u.split("://").next().unwrap_or("").to_ascii_lowercase();
            if u.find("://").is_none() || !matches!(scheme.as_str(), "ws" | "wss") {
                self.err(u.at(), "ws: `url` must start with ws:// or wss://", None);
                return None;
            }
        }
        let root = Sp::new("/".to_string(), sp.at());
        let path = w.path.as_ref().or(if w.url.is_none() { Some(&root) } else { None });
        let (endpoint, path) = self.destination(path, w.url.as_ref(), sp.at(), known)?;
        let headers = self.headers(w.headers.as_ref(), known);
        let send = w.send.as_ref().and_then(|m| self.template_at(m, m.at(), known));
        let timeout = w
            .timeout
            .as_ref()
            .map_or(Some(DEFAULT_WS_TIMEOUT), |t| self.positive_duration(t, "timeout"));
        let until = w.until.as_ref().map(|u| self.read_until(u, "ws"));
        let checks = w.check.as_ref().map(|c| self.checks(c)).unwrap_or_default();
        let mut extract = Vec::new();
        for (var, x) in w.extract.iter().flatten() {
            if let Some(x) = self.extractor(var, x) {
                extract.push((var.clone(), x));
            }
        }
        if until.is_none() && (!extract.is_empty() || !checks.is_empty()) {
            self.err(
                sp.at(),
                "ws: `extract` and `check` read the message that met `until`: give `until`",
                Some("`until: {count: 1}` reads the next message".into()),
            );
        }
        for (var, _) in &extract {
            known.add(var);
        }
        if let Some(c) = w.close.as_ref().filter(|c| !close_code_sendable(***c)) {
            self.err(
                c.at(),
                format!("ws: a client cannot send close code {}", **c),
                Some("1000 is a normal close; 3000-4999 are for applications".into()),
            );
        }
        let name = match &w.name {
            Some(n) => n.to_string(),
            None => {
                let shown = path.as_ref().map(|p| p.to_string()).unwrap_or_default();
                format!("WS {}", shown.split('?').next().unwrap_or(""))
            }
        };
        let name = self.name_id(&name);
        Some(WsStep {
            name,
            endpoint: endpoint?,
            path: path?,
            headers,
            send: match (&w.send, send) {
                (Some(_), None) => return None,
                (_, s) => s,
            },
            binary: w.binary.unwrap_or(false),
            until,
            timeout: timeout?,
            extract,
            checks,
            close: w.close.as_ref().map(|c| **c),
        })
    }
}

/// Whether RFC 6455 lets an endpoint send this close code: 1000-1003, 1007-1011 and the
/// registered and private ranges 3000-4999 (1005, 1006 and 1015 are never sent).
fn close_code_sendable(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1011 | 3000..=4999)
}
