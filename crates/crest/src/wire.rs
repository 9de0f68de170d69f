//! What a collector (`crest collect`) and its workers (`crest worker`) say to each other, one
//! JSON object a line, both ways, over one connection: an HTTP/1.1 request for
//! [`JOIN_PATH`] with the token, upgraded to [`PROTOCOL`].
//!
//! A worker says hello with its crest version, measures its clock against the collector's
//! ([`Up::Ping`], [`Down::Pong`]), resolves the plan it was handed with its own environment,
//! says it is ready with the plan's digest, and once started sends its journal's entries as
//! they are kept ([`entry_line`]): the journal's own stream, never another format.

use base64::Engine as _;
use crest_model::journal::{Entry, Start};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The path a worker joins at, on the collector's one listener.
pub const JOIN_PATH: &str = "/workers/join";

/// The protocol the join request is upgraded to.
pub const PROTOCOL: &str = "crest-worker";

/// The most a collector hands on of the files a scenario reads, all together.
pub const MAX_FILES_BYTES: usize = 64 << 20;

/// From a worker to its collector.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case")]
pub enum Up {
    /// The first line.
    Hello {
        crest_version: String,
        /// The index asked for (`--worker-index`, `JOB_COMPLETION_INDEX`); the next free one
        /// otherwise.
        index: Option<u32>,
    },
    /// A round trip to measure the clocks: the worker's time, in µs of its own clock.
    Ping { t_us: u64 },
    /// The plan is resolved: its digest ([`digest`]), and the worker's clock against the
    /// collector's (collector minus worker) over the best of its round trips.
    Ready {
        digest: String,
        offset_us: i64,
        rtt_us: u64,
    },
    /// One journal entry, as the run keeps it.
    Entry { entry: Box<Entry> },
    /// The worker could not resolve or run the plan.
    Failed { message: String },
}

/// From the collector to a worker.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case")]
pub enum Down {
    /// Taken: its index, the number of workers, and the plan.
    Welcome { index: u32, count: u32, plan: PlanText },
    /// The answer to a [`Up::Ping`]: its time, and the collector's, in µs of its own clock.
    Pong { t_us: u64, at_us: u64 },
    /// Start sending at this instant of the collector's clock.
    Start { at_us: u64 },
    /// A stop condition fired on the whole run (or the collector was interrupted, or stopped
    /// from its page): stop sending, finish, and send the end.
    Stop,
    /// The run was steered from the collector's page: make the same change, whole-run figures
    /// that the worker's engine shares out over the whole run's lanes as it does the plan's.
    Steer { changed: crest_engine::Changed },
    /// Not taken, and why; the connection ends.
    Refused { reason: String },
}

/// The plan as the collector was given it: each worker resolves it itself, with its own
/// environment, so a scenario's secrets never cross the wire.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PlanText {
    /// The collector's flags after `crest collect`, its token left out.
    pub args: Vec<String>,
    /// The scenario file's text, when the run is a scenario's.
    pub scenario: Option<String>,
    /// The files the scenario reads, by the relative names it gives them.
    pub files: Vec<PlanFile>,
}

/// One file a scenario reads: its text, or its bytes in base64 when they are not UTF-8 (a
/// binary body, a DER certificate).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PlanFile {
    pub name: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub base64: bool,
}

impl PlanFile {
    /// The file `name` as read, `bytes`.
    pub fn new(name: String, bytes: Vec<u8>) -> PlanFile {
        match String::from_utf8(bytes) {
            Ok(text) => PlanFile {
                name,
                text,
                base64: false,
            },
            Err(e) => PlanFile {
                name,
                text: base64::engine::general_purpose::STANDARD.encode(e.as_bytes()),
                base64: true,
            },
        }
    }

    /// Its bytes, as the collector read them.
    pub fn bytes(&self) -> Result<Vec<u8>, base64::DecodeError> {
        if self.base64 {
            base64::engine::general_purpose::STANDARD.decode(&self.text)
        } else {
            Ok(self.text.as_bytes().to_vec())
        }
    }
}

/// One message as a line.
pub fn line<T: Serialize>(m: &T) -> Vec<u8> {
    let mut l = serde_json::to_vec(m).unwrap_or_default();
    l.push(b'\n');
    l
}

/// A journal entry as an [`Up::Entry`] line, without a copy of it.
pub fn entry_line(entry: &Entry) -> Vec<u8> {
    #[derive(Serialize)]
    #[serde(tag = "msg", rename = "entry")]
    struct EntryRef<'a> {
        entry: &'a Entry,
    }
    line(&EntryRef { entry })
}

/// The digest of what every part of one run must share (see
/// `crest_model::merge::plan_identity`): secrets are redacted in it, and the scenario is its
/// text's digest.
pub fn digest(start: &Start) -> String {
    let identity = crest_model::merge::plan_identity(start);
    Sha256::digest(identity.to_string().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry sent without a copy reads back as the worker's message that carries it.
    #[test]
    fn an_entry_line_reads_back_as_an_up_entry() {
        let entry = Entry::Points { points: Vec::new() };
        let back: Up = serde_json::from_slice(&entry_line(&entry)).unwrap();
        assert!(matches!(back, Up::Entry { entry } if matches!(*entry, Entry::Points { .. })));
    }
}
