//! The `text/event-stream` format (WHATWG HTML, "server-sent events"), parsed as bytes arrive.
//!
//! Written here rather than taken from a crate: the format is a few rules, and the crates for it
//! either wrap a whole HTTP client or expose a `Stream` adapter that would hide where each
//! event's bytes came from, which the samples count.

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Event {
    /// `event:`; `message` when the server gave none.
    pub kind: String,
    /// `data:` lines joined with `\n`.
    pub data: String,
    /// The last event id the stream had set when this event was dispatched.
    pub id: String,
    /// Bytes of the stream this event took, comments and blank lines included.
    pub bytes: u64,
}

/// Parses a stream's bytes into events, keeping partial lines between chunks.
#[derive(Debug, Default)]
pub struct Parser {
    buf: Vec<u8>,
    /// At the start of the stream: a byte order mark there is skipped.
    started: bool,
    /// The last line ended with CR: an LF right after it belongs to the same line end.
    after_cr: bool,
    data: String,
    has_data: bool,
    kind: String,
    /// The stream's last event id; it outlives events and reconnects.
    pub last_id: String,
    /// A `retry:` the server set, in milliseconds.
    pub retry: Option<u64>,
    pending: u64,
}

impl Parser {
    /// Feeds bytes; returns the events they completed.
    pub fn feed(&mut self, mut bytes: &[u8]) -> Vec<Event> {
        let mut out = Vec::new();
        if !self.started && !bytes.is_empty() {
            // The BOM may arrive split over chunks only in theory; servers send it whole.
            self.started = true;
            bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        }
        for &b in bytes {
            self.pending += 1;
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\r' | b'\n' => {
                    self.after_cr = b == b'\r';
                    let line = std::mem::take(&mut self.buf);
                    if let Some(e) = self.line(&String::from_utf8_lossy(&line)) {
                        out.push(e);
                    }
                }
                _ => self.buf.push(b),
            }
        }
        out
    }

    /// Starts afresh after a reconnect, keeping the last event id and the retry.
    pub fn reset(&mut self) {
        *self = Parser {
            last_id: std::mem::take(&mut self.last_id),
            retry: self.retry,
            ..Parser::default()
        };
    }

    fn line(&mut self, line: &str) -> Option<Event> {
        if line.is_empty() {
            let bytes = std::mem::take(&mut self.pending);
            let kind = std::mem::take(&mut self.kind);
            if !std::mem::take(&mut self.has_data) {
                return None;
            }
            let data = std::mem::take(&mut self.data);
            return Some(Event {
                kind: if kind.is_empty() { "message".into() } else { kind },
                data,
                id: self.last_id.clone(),
                bytes,
            });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.has_data = true;
                self.data.push_str(value);
            }
            "event" => self.kind = value.to_string(),
            "id" if !value.contains('\0') => self.last_id = value.to_string(),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry = value.parse().ok();
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_parsed_across_chunks_and_line_ends() {
        let mut p = Parser::default();
        let mut got = p.feed(b"\xEF\xBB\xBF: hi\r\nretry: 250\r\nid: 7\r\nevent: tick\r\ndata: a\r");
        assert!(got.is_empty());
        got.extend(p.feed(b"\ndata:b\n\ndata\n\nid\rdata: x"));
        got.extend(p.feed(b"\n\n"));
        assert_eq!(p.retry, Some(250));
        assert_eq!(got.len(), 3);
        assert_eq!(
            (got[0].kind.as_str(), got[0].data.as_str(), got[0].id.as_str()),
            ("tick", "a\nb", "7")
        );
        assert_eq!((got[1].kind.as_str(), got[1].data.as_str()), ("message", ""));
        assert_eq!(got[2].id, "");
        // An event without data is not dispatched, and its type does not carry over.
        assert!(p.feed(b"event: x\n\ndata: y\n\n")[0].kind == "message");
        p.reset();
        assert_eq!(p.retry, Some(250));
    }
}
