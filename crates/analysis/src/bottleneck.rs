//! Why the service stops scaling: the resource that explains its knee, with the figures.
//!
//! A performance engineer reads the knee (the step where the run's unit stops growing, else
//! the step where it breaks) beside what every watched resource did there. A resource is the
//! bottleneck when it reached its ceiling ([`AT_CEILING`] of it) at that step and was below it
//! at a lower load: the figures quote the nearest lower step where it was, so a reader sees it
//! rise with the load, and a resource pinned all along is no answer. The nearest such step need
//! not be the one just below the knee: the knee is where throughput stopped growing, so the
//! step just below it already served nearly all the knee serves, and a resource that tracks
//! throughput was already near its ceiling there. When crest itself limited the run,
//! that is the answer: nothing measured past it describes the service. When no watched resource
//! reached a ceiling, the refusals, else Little's law, say what the service's own limits are:
//! the best throughput times the time a request takes at the lightest load is the number of
//! requests it serves at once, a worker, pool or connection limit that no watched resource
//! shows.
//!
//! Ceilings come from the kernel (a process's cores by affinity, its cgroup's CPU quota and
//! memory limit, its open-file limit) and from PostgreSQL (`max_connections`), as the monitor
//! recorded them; a resource without one is named as a runner-up only.

use crate::capacity::Capacity;
use crate::figures::{SegmentAnalysis, StepLoad, WorkUnit};
use crate::resources::{steady_window, MIN_SAMPLES};
use crate::validity::ClientLimit;
use crest_model::monitor::{MonitorRecord, MonitorSeries, ProcessLimits, SourceRecord};
use crest_model::results::Results;
use serde::Serialize;

/// The share of its ceiling at which a resource is the bottleneck.
pub const AT_CEILING: f64 = 0.9;
/// The share of the requests of a step refused or reset before an answer for the service to be
/// said to refuse connections there.
const REFUSED_SHARE: f64 = 0.01;

/// What limits the service, with the figures that show it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bottleneck {
    /// Which kind of limit.
    pub kind: Kind,
    /// What reached it: a watched process's label (`postgres`), `crest`, `host`, the database,
    /// or `service` for the service's own concurrency or connection limit.
    pub subject: String,
    /// The step it was judged at: the knee, else the breaking point, else the one step run.
    pub at: Option<StepLoad>,
    /// The figures it rests on.
    pub figures: Figures,
    /// What the other watched processes used at the same step (and crest over the run), so
    /// that a reader sees why they are not the answer.
    pub others: Vec<Usage>,
}

/// The kinds of [`Bottleneck`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A process used the cores it may run on.
    Cpu,
    /// A process used its cgroup's CPU quota, and was throttled.
    CpuQuota,
    /// A process's memory reached its cgroup's limit or its address-space limit.
    Memory,
    /// A process's open files reached its limit.
    OpenFiles,
    /// A process's threads reached a limit.
    Threads,
    /// PostgreSQL's connections reached `max_connections`, or an application's pool was busy
    /// in full.
    DbConnections,
    /// The service refused or reset connections past a number of them.
    Connections,
    /// The service serves a fixed number of requests at once (Little's law).
    Concurrency,
    /// crest itself limited the run.
    LoadGenerator,
    /// Nothing stopped growing: the run ended before the service saturated.
    None,
}

/// The figures of a [`Bottleneck`], by kind.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Figures {
    /// A resource at its ceiling.
    Resource(Usage),
    /// crest's own limits, as the validity checks found them.
    LoadGenerator {
        /// What crest ran short of.
        client: Vec<ClientLimit>,
    },
    /// Refused or reset connections.
    Connections {
        /// Requests refused or reset before an answer at the step.
        refused: u64,
        /// Of the step's requests.
        requests: u64,
        /// The highest load that refused none, when one did.
        clean_at: Option<StepLoad>,
        /// Requests the service had in hand at once at that step, by Little's law:
        /// successful requests per second x their mean time.
        in_hand: f64,
    },
    /// The service's own concurrency.
    Concurrency {
        /// The number of requests it serves at once: `best_rps x service_ms / 1000`, rounded.
        concurrency: u64,
        /// The same, before rounding.
        exact: f64,
        /// The best successful requests per second of any step.
        best_rps: f64,
        /// The mean time of a successful request at the lightest load, ms.
        service_ms: f64,
        /// The load it was measured at.
        lightest: StepLoad,
        /// Whether any process of the service was watched: without one, a CPU-bound service
        /// looks the same (one core behaves like one worker).
        watched: bool,
    },
    /// The run's unit still grew at its highest load.
    StillGrowing {
        /// The highest load.
        highest: StepLoad,
        /// Units per second there.
        per_s: f64,
        /// The run's unit.
        unit: WorkUnit,
    },
}

/// What one resource used at a step, against its ceiling.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Usage {
    /// Which resource.
    pub resource: Resource,
    /// Whose: a process's label, `crest`, `host`, a database.
    pub subject: String,
    /// Mean over the step's steady state (peak for memory, files, threads and connections).
    pub used: f64,
    /// The ceiling, in the same unit, when one is known.
    pub ceiling: Option<f64>,
    /// `used / ceiling`.
    pub share: Option<f64>,
    /// The nearest lower step at which it was below its ceiling, else the step just below;
    /// none without a lower step.
    pub below: Option<Below>,
    /// For a CPU quota: the share of its periods the process was throttled, percent.
    pub throttled_percent: Option<f64>,
    /// The samples behind `used`.
    pub samples: usize,
}

/// The same resource one step lower.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Below {
    /// That step's load.
    pub load: StepLoad,
    /// What it used there.
    pub used: f64,
    /// Of its ceiling.
    pub share: Option<f64>,
}

/// The resources a [`Usage`] is of. CPU is in percent of one core; memory in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Resource {
    /// CPU against the cores the process may use.
    Cpu,
    /// CPU against the process's cgroup quota.
    CpuQuota,
    /// Memory.
    Memory,
    /// Open files.
    OpenFiles,
    /// Threads.
    Threads,
    /// Database connections against `max_connections`.
    DbConnections,
    /// Database connections busy against those open: an application's pool.
    DbPool,
    /// The machine's CPU, all cores.
    HostCpu,
}

impl Resource {
    fn kind(self) -> Kind {
        match self {
            Resource::Cpu | Resource::HostCpu => Kind::Cpu,
            Resource::CpuQuota => Kind::CpuQuota,
            Resource::Memory => Kind::Memory,
            Resource::OpenFiles => Kind::OpenFiles,
            Resource::Threads => Kind::Threads,
            Resource::DbConnections | Resource::DbPool => Kind::DbConnections,
        }
    }

    /// Which of two resources at their ceilings explains the knee better: a process's own
    /// ceilings before the machine's, a full pool last (it fills whenever what it waits on is
    /// slow).
    fn rank(self) -> u8 {
        match self {
            Resource::CpuQuota | Resource::Memory | Resource::OpenFiles | Resource::Threads => 0,
            Resource::Cpu | Resource::DbConnections => 1,
            Resource::DbPool => 2,
            Resource::HostCpu => 3,
        }
    }
}

/// Everything [`bottleneck`] reads.
#[derive(Debug)]
pub struct Inputs<'a> {
    /// The results.
    pub results: &'a Results,
    /// The steps in requests (transactions).
    pub requests: &'a [SegmentAnalysis],
    /// The steps in the run's unit.
    pub steps: &'a [SegmentAnalysis],
    /// The capacity answers over `steps`.
    pub capacity: &'a Capacity,
    /// crest's own limits.
    pub client_bound: &'a [ClientLimit],
}

/// What limits the service, when the run can tell.
pub fn bottleneck(i: &Inputs) -> Option<Bottleneck> {
    let loaded = levels(i.steps);
    let knee = i
        .capacity
        .saturation
        .as_ref()
        .or(i.capacity.breaking.as_ref())
        .and_then(|p| i.steps.get(p.segment))
        .or_else(|| (loaded.len() == 1).then(|| loaded[0]));
    let m = i.results.monitor.as_ref();
    let judged = knee
        .map(|k| usages(i.results, m, i.steps, &loaded, k))
        .unwrap_or_default();
    let others = |except: Option<&Usage>| -> Vec<Usage> {
        let mut o: Vec<Usage> = judged
            .iter()
            .filter(|u| matches!(u.resource, Resource::Cpu | Resource::CpuQuota))
            .filter(|u| except.is_none_or(|e| e.subject != u.subject))
            .cloned()
            .collect();
        o.extend(own_cpu(i.results));
        o
    };
    if !i.client_bound.is_empty() {
        return Some(Bottleneck {
            kind: Kind::LoadGenerator,
            subject: "crest".into(),
            at: knee.map(SegmentAnalysis::load),
            figures: Figures::LoadGenerator {
                client: i.client_bound.to_vec(),
            },
            others: others(None),
        });
    }
    let knee = match knee {
        Some(k) => k,
        None => {
            let top = loaded.last().filter(|_| loaded.len() >= 2)?;
            return Some(Bottleneck {
                kind: Kind::None,
                subject: "service".into(),
                at: Some(top.load()),
                figures: Figures::StillGrowing {
                    highest: top.load(),
                    per_s: top.success_rps,
                    unit: i.capacity.unit,
                },
                others: others(None),
            });
        }
    };
    let at_ceiling = judged
        .iter()
        .filter(|u| u.share.is_some_and(|s| s >= AT_CEILING) && u.samples >= MIN_SAMPLES)
        // A resource at its ceiling at every lower load did not stop the growth at the knee:
        // it is something else's (a busy machine's CPU, a pool opened in full at start).
        .filter(|u| u.below.as_ref().is_none_or(|b| b.share.is_some_and(|s| s < AT_CEILING)))
        .min_by(|a, b| {
            a.resource
                .rank()
                .cmp(&b.resource.rank())
                .then(b.share.unwrap_or(0.0).total_cmp(&a.share.unwrap_or(0.0)))
        });
    if let Some(u) = at_ceiling {
        return Some(Bottleneck {
            kind: u.resource.kind(),
            subject: u.subject.clone(),
            at: Some(knee.load()),
            figures: Figures::Resource(u.clone()),
            others: others(Some(u)),
        });
    }
    // Only a knee says the service stopped scaling; one step at no ceiling says nothing.
    if i.capacity.saturation.is_none() && i.capacity.breaking.is_none() {
        return None;
    }
    let at = i.requests.get(knee.index).unwrap_or(knee);
    if let Some(c) = refusals(i.requests, at) {
        return Some(Bottleneck {
            kind: Kind::Connections,
            subject: "service".into(),
            at: Some(knee.load()),
            figures: c,
            others: others(None),
        });
    }
    let c = concurrency(
        i.requests,
        m.is_some_and(|m| m.sources.iter().any(|s| s.kind == "process")),
    )?;
    Some(Bottleneck {
        kind: Kind::Concurrency,
        subject: "service".into(),
        at: Some(knee.load()),
        figures: c,
        others: others(None),
    })
}

/// The loaded steps, one per load, in load order.
fn levels(steps: &[SegmentAnalysis]) -> Vec<&SegmentAnalysis> {
    let mut l: Vec<&SegmentAnalysis> = steps.iter().filter(|g| g.requests > 0).collect();
    l.sort_by(|a, b| {
        a.load_value()
            .total_cmp(&b.load_value())
            .then(b.success_rps.total_cmp(&a.success_rps))
    });
    l.dedup_by(|a, b| a.load_value() == b.load_value());
    l
}

/// The process label a report shows for a source: its name in place of a pid, as the
/// resources table keys it, so that runs of the same service compare by it.
pub(crate) fn subject(source: Option<&SourceRecord>, label: Option<&String>) -> String {
    match source {
        Some(s) if s.label.bytes().all(|b| b.is_ascii_digit()) && !s.label.is_empty() => match &s.name {
            Some(n) => n.clone(),
            None => format!("pid {}", s.label),
        },
        Some(s) => s.label.clone(),
        None => label.cloned().unwrap_or_else(|| "?".into()),
    }
}

/// Every resource with something to say at `knee`, each with its share at the nearest lower
/// step where it was below its ceiling (else the step just below).
fn usages(
    r: &Results,
    m: Option<&MonitorRecord>,
    steps: &[SegmentAnalysis],
    loaded: &[&SegmentAnalysis],
    knee: &SegmentAnalysis,
) -> Vec<Usage> {
    let Some(m) = m else { return Vec::new() };
    // The lower steps, nearest first.
    let lower: Vec<&SegmentAnalysis> = loaded
        .iter()
        .rev()
        .filter(|g| g.load_value() < knee.load_value())
        .copied()
        .collect();
    let cores = r.environment.as_ref().map(|e| e.cores as f64).filter(|c| *c > 0.0);
    let mut out = Vec::new();
    for s in &m.series {
        let source = m.sources.get(s.source as usize);
        let limits = source.and_then(|x| x.limits.as_ref());
        let Some((resource, ceiling, peak)) = judge(s, limits, cores) else {
            continue;
        };
        let at = |g: &SegmentAnalysis| -> Option<(f64, usize)> {
            let (from, to) = steady_window(g, steps);
            let v: Vec<f64> = s.values_between(from, to).collect();
            if v.is_empty() {
                return None;
            }
            let value = if peak {
                v.iter().copied().fold(f64::MIN, f64::max)
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            };
            Some((value, v.len()))
        };
        let Some((used, samples)) = at(knee) else { continue };
        let share = ceiling.filter(|c| *c > 0.0).map(|c| used / c);
        let throttled_percent = matches!(resource, Resource::CpuQuota)
            .then(|| {
                m.series
                    .iter()
                    .find(|t| {
                        t.key.metric == "process_cpu_throttled_percent"
                            && t.source == s.source
                            && t.key.labels == s.key.labels
                    })
                    .and_then(|t| {
                        let (from, to) = steady_window(knee, steps);
                        let v: Vec<f64> = t.values_between(from, to).collect();
                        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
                    })
            })
            .flatten();
        let subject = match s.key.metric.as_str() {
            "host_cpu_percent" => "host".to_string(),
            m if m.starts_with("pg_") => "postgres".to_string(),
            _ => subject(source, s.key.labels.get("process")),
        };
        out.push(Usage {
            resource,
            subject,
            used,
            ceiling,
            share,
            below: nearest_below(&lower, |b| {
                at(b).map(|(used, _)| Below {
                    load: b.load(),
                    used,
                    share: ceiling.filter(|c| *c > 0.0).map(|c| used / c),
                })
            }),
            throttled_percent,
            samples,
        });
    }
    out.extend(pool(m, steps, knee, &lower));
    out
}

/// Of the lower steps (nearest first), the nearest where `at` finds the resource below its
/// ceiling, else the nearest it was read at.
fn nearest_below(lower: &[&SegmentAnalysis], at: impl Fn(&SegmentAnalysis) -> Option<Below>) -> Option<Below> {
    let read: Vec<Below> = lower.iter().filter_map(|g| at(g)).collect();
    let under = read
        .iter()
        .position(|b| b.share.is_some_and(|s| s < AT_CEILING))
        .unwrap_or(0);
    read.into_iter().nth(under)
}

/// Which resource a series is, its ceiling, and whether it is judged on its peak (levels that
/// fail the moment they are reached) rather than its mean (CPU, which is shared out over time).
fn judge(
    s: &MonitorSeries,
    limits: Option<&ProcessLimits>,
    host_cores: Option<f64>,
) -> Option<(Resource, Option<f64>, bool)> {
    Some(match s.key.metric.as_str() {
        "process_cpu_percent" => {
            let cores = limits.and_then(|l| l.cores).or(host_cores);
            let quota = limits.and_then(|l| l.cpu_quota_cores);
            match (quota, cores) {
                (Some(q), c) if c.is_none_or(|c| q < c) => (Resource::CpuQuota, Some(q * 100.0), false),
                (_, c) => (Resource::Cpu, s.limit.or(c.map(|c| c * 100.0)), false),
            }
        }
        "process_resident_memory_bytes" => {
            let l = limits.and_then(|l| match (l.memory_limit_bytes, l.address_space_bytes) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            });
            (Resource::Memory, s.limit.or(l), true)
        }
        "process_open_fds" => (Resource::OpenFiles, s.limit.or(limits.and_then(|l| l.open_files)), true),
        "process_threads" => (Resource::Threads, s.limit, true),
        "pg_connections" if s.key.labels.get("state").map(String::as_str) == Some("all") => {
            (Resource::DbConnections, s.limit, true)
        }
        "host_cpu_percent" => (Resource::HostCpu, s.limit.or(Some(100.0)), false),
        _ => return None,
    })
}

/// An application's pool of database connections, busy in full: the connections open did not
/// grow past the knee although the load did, and nearly all of them were in a transaction.
/// Connections that grow with the load (crest's own SQL users, one each) are no pool.
fn pool(
    m: &MonitorRecord,
    steps: &[SegmentAnalysis],
    knee: &SegmentAnalysis,
    lower: &[&SegmentAnalysis],
) -> Option<Usage> {
    let state = |name: &str| {
        m.series
            .iter()
            .find(|s| s.key.metric == "pg_connections" && s.key.labels.get("state").map(String::as_str) == Some(name))
    };
    let all = state("all")?;
    let busy_at = |g: &SegmentAnalysis| -> Option<(f64, f64, usize)> {
        let (from, to) = steady_window(g, steps);
        let open: Vec<f64> = all.values_between(from, to).collect();
        if open.is_empty() {
            return None;
        }
        let busy: f64 = ["active", "idle in transaction"]
            .iter()
            .filter_map(|n| state(n))
            .map(|s| {
                let v: Vec<f64> = s.values_between(from, to).collect();
                v.iter().sum::<f64>() / v.len().max(1) as f64
            })
            .sum();
        let open_mean = open.iter().sum::<f64>() / open.len() as f64;
        Some((busy, open_mean, open.len()))
    };
    let (busy, open, samples) = busy_at(knee)?;
    let highest = steps
        .iter()
        .filter(|g| g.requests > 0)
        .max_by(|a, b| a.load_value().total_cmp(&b.load_value()))?;
    let (_, open_top, _) = busy_at(highest)?;
    if open < 2.0 || (open_top - open).abs() > 0.5 || highest.load_value() <= knee.load_value() {
        return None;
    }
    Some(Usage {
        resource: Resource::DbPool,
        subject: "postgres".into(),
        used: busy,
        ceiling: Some(open),
        share: Some(busy / open),
        below: nearest_below(lower, |b| {
            busy_at(b).map(|(used, open, _)| Below {
                load: b.load(),
                used,
                share: (open > 0.0).then(|| used / open),
            })
        }),
        throttled_percent: None,
        samples,
    })
}

/// crest's own CPU over the run, percent of a core.
fn own_cpu(r: &Results) -> Option<Usage> {
    let c = r.client.as_ref()?;
    (r.duration_s > 0.0).then(|| Usage {
        resource: Resource::Cpu,
        subject: "crest".into(),
        used: c.cpu_s / r.duration_s * 100.0,
        ceiling: Some(c.cores.max(1) as f64 * 100.0),
        share: Some(c.cpu_s / r.duration_s / c.cores.max(1) as f64),
        below: None,
        throttled_percent: None,
        samples: 0,
    })
}

/// Connections refused or reset before an answer at `at`, past the highest load that had none.
fn refusals(requests: &[SegmentAnalysis], at: &SegmentAnalysis) -> Option<Figures> {
    let refused_of = |g: &SegmentAnalysis| -> u64 {
        g.errors
            .iter()
            .filter(|(k, _)| matches!(k.as_str(), "connect_refused" | "reset"))
            .map(|(_, n)| n)
            .sum()
    };
    let refused = refused_of(at);
    if at.requests == 0 || (refused as f64) < REFUSED_SHARE * at.requests as f64 {
        return None;
    }
    let clean_at = levels(requests)
        .into_iter()
        .rfind(|g| g.load_value() < at.load_value() && refused_of(g) == 0)
        .map(|g| g.load());
    Some(Figures::Connections {
        refused,
        requests: at.requests,
        clean_at,
        in_hand: at.success_rps * at.success_latency_ms.mean / 1000.0,
    })
}

/// The service's own concurrency by Little's law: the best successful requests per second of
/// any step times a successful request's mean time at the lightest load, where it waited for
/// nothing.
fn concurrency(requests: &[SegmentAnalysis], watched: bool) -> Option<Figures> {
    let l = levels(requests);
    let lightest = l.iter().find(|g| g.requests > g.failures)?;
    let best = l.iter().map(|g| g.success_rps).fold(0.0, f64::max);
    let service_ms = lightest.success_latency_ms.mean;
    if !(best > 0.0 && service_ms > 0.0) {
        return None;
    }
    let exact = best * service_ms / 1000.0;
    Some(Figures::Concurrency {
        concurrency: exact.round().max(1.0) as u64,
        exact,
        best_rps: best,
        service_ms,
        lightest: lightest.load(),
        watched,
    })
}
