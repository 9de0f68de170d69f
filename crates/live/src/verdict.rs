//! The validity verdict and findings of a run going on: the analysis the reports run, over
//! what the hub has folded so far, in the words the reports use.
//!
//! Judged on the listener's thread when a page asks, at most once a second and only when a new
//! interval came in, and never more than a twentieth of the time (a long run's analysis takes
//! longer): the run loop never waits on it, and it takes at most 5% of a core from the engine. It judges the run as if it ended now, so
//! the step under way may be called cut short until it has lasted as long as the others.

use crate::hub::Hub;
use crest_analysis::findings::Finding;
use crest_analysis::validity::ClientLimit;
use crest_report::fmt::words;
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The verdict is judged again at most this often...
const EVERY: Duration = Duration::from_secs(1);
/// ...and only after this many times as long as judging it took.
const IDLE_PER_BUSY: u32 = 20;

/// Is the result valid so far?
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Validity {
    /// Nothing shows that crest limited the run.
    Valid,
    /// crest itself may have limited it: see [`Verdict::client_bound`].
    ClientBound,
    /// No request succeeded yet: nothing to judge.
    NotJudged,
}

/// One finding, typed and in words.
#[derive(Clone, Debug, Serialize)]
pub struct Said {
    /// The finding with its figures, as the analysis gives it.
    pub finding: Finding,
    /// The finding in the reports' words.
    pub words: String,
}

/// The validity verdict and findings so far.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    /// Seconds of the run (of the part running now) the verdict covers.
    pub through_s: f64,
    /// Is the result valid so far?
    pub validity: Validity,
    /// The verdict in words.
    pub validity_words: String,
    /// The ways crest itself limited the run so far.
    pub client_bound: Vec<ClientLimit>,
    /// What the figures say so far, most important first.
    pub findings: Vec<Said>,
    /// The watched resource nearest its ceiling now, in words: the bottleneck's likely
    /// candidate before a knee can be judged.
    pub leader: Option<String>,
}

/// A verdict and what it was judged over.
#[derive(Debug)]
pub(crate) struct Cached {
    at: Instant,
    /// How long judging it took.
    took: Duration,
    folded: (usize, usize),
    verdict: Option<Verdict>,
}

/// Judges `results` as the reports do.
pub fn judge(results: &crest_model::Results) -> Result<Verdict, crest_model::HistError> {
    let a = crest_analysis::analyze(results)?;
    let s = &a.summary;
    let validity = if !s.client_bound.is_empty() {
        Validity::ClientBound
    } else if s.successes == 0 {
        Validity::NotJudged
    } else {
        Validity::Valid
    };
    Ok(Verdict {
        through_s: results.duration_s,
        validity,
        validity_words: words::validity(s),
        client_bound: s.client_bound.clone(),
        findings: a
            .findings
            .into_iter()
            .map(|f| Said {
                words: words::finding(&f),
                finding: f,
            })
            .collect(),
        leader: crest_analysis::bottleneck::leader(results).map(|u| words::leader(&u)),
    })
}

impl Hub {
    /// The verdict so far: judged again when a new interval came in and the last was judged
    /// long enough ago, else the last one.
    pub fn verdict(&self) -> Option<Verdict> {
        let mut cache = self.verdict.lock().unwrap_or_else(|e| e.into_inner());
        let folded = self.folded();
        if let Some(c) = cache.as_ref() {
            if c.folded == folded || c.at.elapsed() < EVERY.max(c.took * IDLE_PER_BUSY) {
                return c.verdict.clone();
            }
        }
        let began = Instant::now();
        let verdict = self.results_so_far().and_then(|r| judge(&r).ok());
        *cache = Some(Cached {
            at: Instant::now(),
            took: began.elapsed(),
            folded,
            verdict: verdict.clone(),
        });
        verdict
    }
}

/// The verdict, judged off the listener's async thread.
pub(crate) async fn so_far(hub: &Arc<Hub>) -> Option<Verdict> {
    let hub = Arc::clone(hub);
    tokio::task::spawn_blocking(move || hub.verdict()).await.ok().flatten()
}
