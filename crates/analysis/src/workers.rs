//! The workers of a distributed run (`crest collect`, `crest merge`), one by one: what each
//! generator sent, how late, at what CPU share, what it dropped, and whether its own figures
//! show it limited its part. A merged run's totals can look valid while one worker, on a busy
//! machine, sent its share late: its row and the run's verdict say so.

use crate::figures::{Percentiles, WorkUnit};
use crate::validity::{cpu_share, generator_limits, ClientLimit, Drops, Generator};
use crest_model::merge::{Lost, WorkerRecord};
use crest_model::results::{EndReason, Results};
use crest_model::HistError;
use serde::Serialize;

/// Is one worker's part valid?
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerVerdict {
    /// Nothing shows that its generator limited its part.
    Valid,
    /// Its own figures show its generator limited its part: see [`WorkerFigures::limits`].
    ClientBound,
    /// It was lost while the run went on: see [`WorkerFigures::lost`].
    Lost,
    /// Nothing it sent succeeded: nothing to judge.
    NotJudged,
}

/// One worker's figures, as the per-worker table shows them.
#[derive(Clone, Debug, Serialize)]
pub struct WorkerFigures {
    /// The worker's index.
    pub index: u32,
    /// Seconds it sent for (to its loss, for a lost worker).
    pub duration_s: f64,
    /// Why its part ended.
    pub ended_by: EndReason,
    /// Requests it completed.
    pub requests: u64,
    /// Of those, the ones that failed.
    pub failures: u64,
    /// Units of the run's unit of work it completed: its requests (transactions), or the flows'
    /// iterations it completed.
    pub units: u64,
    /// `units` per second of its own duration.
    pub per_s: f64,
    /// Open model: how late its requests started, in ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_lag_ms: Option<Percentiles>,
    /// Its generator's CPU use over its duration, as a share of what its engine threads could
    /// use; `None` when it did not end normally or sent too briefly to tell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_share: Option<f64>,
    /// Its generator's peak resident memory, bytes, when it ended normally.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_rss_bytes: Option<u64>,
    /// Open model: arrivals due on its share of the schedule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<u64>,
    /// Open model: arrivals it did not send.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped: Option<u64>,
    /// Of those, arrivals it was behind its schedule for when the run's time ran out.
    pub dropped_behind: u64,
    /// When it was lost and what of the load went missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<Lost>,
    /// How its own generator limited its part, judged as a run's is; empty when it did not.
    pub limits: Vec<ClientLimit>,
    /// Its verdict.
    pub verdict: WorkerVerdict,
}

/// Each worker's figures, in worker order; empty for a run of one generator. `unit` is the
/// run's unit of work and `latency_p50_ms` its median latency, which each worker's send lag is
/// judged against, as the run's is.
pub fn workers(r: &Results, unit: WorkUnit, latency_p50_ms: f64) -> Result<Vec<WorkerFigures>, HistError> {
    r.workers.iter().map(|w| worker(r, w, unit, latency_p50_ms)).collect()
}

fn worker(r: &Results, w: &WorkerRecord, unit: WorkUnit, latency_p50_ms: f64) -> Result<WorkerFigures, HistError> {
    let send_lag_ms = match &w.send_lag {
        Some(h) => Some(Percentiles::from_micros(&h.decode()?)),
        None => None,
    };
    let units = match unit {
        WorkUnit::Iterations => w.iterations.unwrap_or(0),
        WorkUnit::Requests | WorkUnit::Transactions => w.requests,
    };
    // A lost worker has no end, so no count of its arrivals: those it measured and dropped.
    let drops = r.open.as_ref().map(|_| Drops {
        dropped: w.dropped,
        behind: w.behind,
        arrivals: w.arrivals.unwrap_or(w.requests.saturating_add(w.dropped)),
        queued: crate::validity::queueing(r).then_some(w.queued),
    });
    // As for a run: with nothing succeeded its figures describe failures, not its generator.
    let limits = if w.requests > w.failures {
        generator_limits(
            Generator {
                client: w.client.as_ref(),
                active_s: w.duration_s,
                send_lag_ms: send_lag_ms.as_ref(),
                drops,
            },
            latency_p50_ms,
        )
    } else {
        Vec::new()
    };
    let verdict = if w.lost.is_some() {
        WorkerVerdict::Lost
    } else if !limits.is_empty() {
        WorkerVerdict::ClientBound
    } else if w.requests == w.failures {
        WorkerVerdict::NotJudged
    } else {
        WorkerVerdict::Valid
    };
    Ok(WorkerFigures {
        index: w.index,
        duration_s: w.duration_s,
        ended_by: w.ended_by,
        requests: w.requests,
        failures: w.failures,
        units,
        per_s: if w.duration_s > 0.0 {
            units as f64 / w.duration_s
        } else {
            0.0
        },
        send_lag_ms,
        cpu_share: w
            .client
            .as_ref()
            .and_then(|c| cpu_share(c, w.duration_s))
            .map(|(share, _)| share),
        peak_rss_bytes: w.client.as_ref().map(|c| c.peak_rss_bytes),
        arrivals: w.arrivals,
        dropped: drops.map(|d| d.dropped),
        dropped_behind: w.behind,
        lost: w.lost.clone(),
        limits,
        verdict,
    })
}

/// The workers whose own figures show they limited their part, as limits of the whole run: a
/// run with such a worker is not valid, whatever its totals say.
pub fn client_bound(workers: &[WorkerFigures]) -> Vec<ClientLimit> {
    workers
        .iter()
        .filter(|w| !w.limits.is_empty())
        .map(|w| ClientLimit::Worker {
            index: w.index,
            limits: w.limits.clone(),
        })
        .collect()
}
