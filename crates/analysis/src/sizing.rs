//! What to give each watched process: a Kubernetes `resources:` block from what it used.
//!
//! Requests are what a process used at the optimum's load, the load it should be run at;
//! limits are what it used up to the limit's load (the breaking point, else saturation, else the
//! highest load tried), with headroom: [`CPU_HEADROOM`] for CPU, whose limit throttles, and
//! [`MEMORY_HEADROOM`] for memory, whose limit kills. A process's memory is taken from its
//! resident memory, which a container's limit counts, with its private memory beside it; a
//! group's from its private memory, as its resident memory counts each shared page once per
//! process. A process held at its CPU ceiling is said to be: it may need more than it used. A process is sized only on enough samples
//! ([`MIN_SAMPLES`]) at the step its requests come from.

use crate::bottleneck::subject;
use crate::capacity::Capacity;
use crate::figures::{SegmentAnalysis, StepLoad};
use crate::resources::{shown_key, steady_window, Leak, MIN_SAMPLES};
use crest_model::monitor::MonitorRecord;
use crest_model::results::Results;
use serde::Serialize;

/// Headroom on the CPU a process used at the limit's load.
pub const CPU_HEADROOM: f64 = 0.25;
/// Headroom on the memory a process used at its peak.
pub const MEMORY_HEADROOM: f64 = 0.5;
/// CPU is rounded up to this many millicores.
const CPU_STEP_M: f64 = 10.0;
/// Memory is rounded up to this many MiB.
const MEMORY_STEP_MIB: f64 = 16.0;
const MIB: f64 = 1024.0 * 1024.0;

/// A recommended `resources:` block for one process, with what it rests on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sizing {
    /// The process's label, as the reports name it.
    pub subject: String,
    /// CPU to request, millicores: its mean at the optimum's load, rounded up.
    pub cpu_request_millicores: u64,
    /// CPU limit, millicores: its highest mean up to the limit's load, with headroom.
    pub cpu_limit_millicores: u64,
    /// Memory to request, MiB: its resident peak up to the optimum's load, rounded up.
    pub memory_request_mib: u64,
    /// Memory limit, MiB: its resident peak over the run, with headroom.
    pub memory_limit_mib: u64,
    /// The figures behind them.
    pub basis: Basis,
}

/// The figures a [`Sizing`] rests on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Basis {
    /// The load requests are sized for.
    pub request_at: StepLoad,
    /// Whether that load is the optimum the run found (else the only or the lowest load).
    pub optimum: bool,
    /// The load limits are sized for.
    pub limit_at: StepLoad,
    /// The share of requests that failed there, when more than 1% did (a breaking point in a
    /// storm of 503s): the CPU there is partly the cost of refusing, which the words say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_failed: Option<f64>,
    /// Mean CPU at `request_at`, percent of a core.
    pub cpu_at_request_percent: f64,
    /// Highest mean CPU of a step up to `limit_at`, percent of a core.
    pub cpu_at_limit_percent: f64,
    /// Resident memory's peak up to `request_at`, bytes.
    pub resident_at_request_bytes: f64,
    /// Resident memory's peak over the run, bytes.
    pub resident_peak_bytes: f64,
    /// Private memory's peak over the run, bytes, when recorded.
    pub private_peak_bytes: Option<f64>,
    /// Headroom on CPU, as a share.
    pub cpu_headroom: f64,
    /// Headroom on memory, as a share.
    pub memory_headroom: f64,
    /// Samples at `request_at`.
    pub samples: usize,
    /// The process's memory grew under steady load: its limit will be reached in time,
    /// whatever headroom is given.
    pub leaking: bool,
    /// Its CPU was held at its ceiling (cores or quota) up to the limit's load: it may need
    /// more than it could use here.
    pub capped: bool,
    /// The memory figures are a group's private memory, not its resident memory (which counts
    /// shared pages once per process).
    pub memory_of_group: bool,
}

/// A watched process that is not sized, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NoSizing {
    /// The process's label.
    pub subject: String,
    /// Why.
    pub why: NoSizingWhy,
}

/// Why a process is not sized.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoSizingWhy {
    /// Too few samples at the load its requests come from.
    TooFewSamples {
        /// Samples there.
        samples: usize,
        /// Samples needed.
        needed: usize,
    },
    /// Its CPU or memory was never read (it was not running).
    NotRead,
    /// No step carried load.
    NoLoad,
}

/// A sizing for each watched process, and those the data cannot size. Empty when no process
/// was watched.
pub fn sizing(
    r: &Results,
    steps: &[SegmentAnalysis],
    capacity: &Capacity,
    leaks: &[Leak],
) -> (Vec<Sizing>, Vec<NoSizing>) {
    let Some(m) = &r.monitor else {
        return (Vec::new(), Vec::new());
    };
    let mut loaded: Vec<&SegmentAnalysis> = steps.iter().filter(|g| g.requests > 0).collect();
    loaded.sort_by(|a, b| a.load_value().total_cmp(&b.load_value()));
    let (mut out, mut not) = (Vec::new(), Vec::new());
    for (i, source) in m.sources.iter().enumerate().filter(|(_, s)| s.kind == "process") {
        let subject = subject(Some(source), None);
        match one(m, i as u32, steps, &loaded, capacity, leaks, &subject) {
            Ok(s) => out.push(s),
            Err(why) => not.push(NoSizing { subject, why }),
        }
    }
    (out, not)
}

fn one(
    m: &MonitorRecord,
    source: u32,
    steps: &[SegmentAnalysis],
    loaded: &[&SegmentAnalysis],
    capacity: &Capacity,
    leaks: &[Leak],
    subject: &str,
) -> Result<Sizing, NoSizingWhy> {
    let series = |metric: &str| m.series.iter().find(|s| s.source == source && s.key.metric == metric);
    let (cpu, rss) = match (series("process_cpu_percent"), series("process_resident_memory_bytes")) {
        (Some(c), Some(r)) => (c, r),
        _ => return Err(NoSizingWhy::NotRead),
    };
    let private = series("process_private_memory_bytes");
    // A group of processes (counted by `process_count`) sums each one's resident memory, so a
    // page they share (a database's buffers) counts once per process: its private memory is
    // what grows with its work.
    let group = series("process_count").is_some();
    let rss = match (group, private) {
        (true, Some(p)) => p,
        _ => rss,
    };
    let (lowest, highest) = match (loaded.first(), loaded.last()) {
        (Some(l), Some(h)) => (*l, *h),
        _ => return Err(NoSizingWhy::NoLoad),
    };
    let optimum = capacity.optimal.as_ref().and_then(|o| steps.get(o.segment));
    let request = optimum.unwrap_or(if loaded.len() == 1 { highest } else { lowest });
    let limit = capacity
        .breaking
        .as_ref()
        .or(capacity.saturation.as_ref())
        .and_then(|p| steps.get(p.segment))
        .unwrap_or(highest);
    let window = |g: &SegmentAnalysis| steady_window(g, steps);
    let mean = |g: &SegmentAnalysis| {
        let (from, to) = window(g);
        let v: Vec<f64> = cpu.values_between(from, to).collect();
        (!v.is_empty()).then(|| (v.iter().sum::<f64>() / v.len() as f64, v.len()))
    };
    let (cpu_at_request, samples) = mean(request).ok_or(NoSizingWhy::TooFewSamples {
        samples: 0,
        needed: MIN_SAMPLES,
    })?;
    if samples < MIN_SAMPLES {
        return Err(NoSizingWhy::TooFewSamples {
            samples,
            needed: MIN_SAMPLES,
        });
    }
    let cpu_at_limit = loaded
        .iter()
        .filter(|g| g.load_value() <= limit.load_value())
        .filter_map(|g| mean(g).map(|x| x.0))
        .fold(cpu_at_request, f64::max);
    let peak_upto = |g: &SegmentAnalysis| {
        let (_, to) = window(g);
        rss.values_between(lowest.start_s, to).fold(0.0, f64::max)
    };
    let resident_at_request = peak_upto(request);
    let resident_peak = rss.points.iter().map(|p| p.1).fold(0.0, f64::max);
    let private_peak = private.map(|p| p.points.iter().map(|x| x.1).fold(0.0, f64::max));
    // A hair past a step (47.0000001%) is that step, not the next.
    let up = |v: f64, step: f64| ((v / step - 1e-6).ceil().max(1.0) * step) as u64;
    let capped = cpu
        .limit
        .is_some_and(|c| c > 0.0 && cpu_at_limit >= crate::bottleneck::AT_CEILING * c);
    Ok(Sizing {
        subject: subject.to_string(),
        cpu_request_millicores: up(cpu_at_request * 10.0, CPU_STEP_M),
        cpu_limit_millicores: up(cpu_at_limit * 10.0 * (1.0 + CPU_HEADROOM), CPU_STEP_M),
        memory_request_mib: up(resident_at_request / MIB, MEMORY_STEP_MIB),
        memory_limit_mib: up(resident_peak * (1.0 + MEMORY_HEADROOM) / MIB, MEMORY_STEP_MIB),
        basis: Basis {
            request_at: request.load(),
            optimum: optimum.is_some(),
            limit_at: limit.load(),
            limit_failed: Some(limit.error_rate).filter(|e| *e > crate::capacity::BREAKING_ERROR_RATE),
            cpu_at_request_percent: cpu_at_request,
            cpu_at_limit_percent: cpu_at_limit,
            resident_at_request_bytes: resident_at_request,
            resident_peak_bytes: resident_peak,
            private_peak_bytes: private_peak,
            cpu_headroom: CPU_HEADROOM,
            memory_headroom: MEMORY_HEADROOM,
            samples,
            capped,
            memory_of_group: group && private.is_some(),
            leaking: leaks.iter().any(|l| {
                [Some(rss), private]
                    .into_iter()
                    .flatten()
                    .any(|s| l.key == shown_key(&s.key, m.sources.get(source as usize)))
            }),
        },
    })
}
