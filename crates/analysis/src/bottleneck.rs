//! Why the service stops scaling: the resource that explains its knee, with the figures.
//!
//! A performance engineer reads the knee (the step where the run's unit stops growing, else
//! the step where it breaks) beside what every watched resource did there. A resource is the
//! bottleneck when it reached its ceiling ([`AT_CEILING`] of it) at that step, over enough
//! samples, having risen to it from below at the lightest load: one at its ceiling from the
//! lightest load on (a machine busy with other work, a pool opened in full at start) did not
//! stop the growth at the knee, and is said apart. Of several, the fullest wins. When crest
//! itself limited the run, that is the answer: nothing measured past it describes the service.
//! When no watched resource reached a ceiling, the refusals, else Little's law, say what the
//! service's own limits are: the best throughput times the time a request takes at the
//! lightest load is the number of requests it serves at once, a worker, pool or connection
//! limit that no watched resource shows.
//!
//! Ceilings come from the kernel (a process's cores by affinity, its cgroup's CPU quota and
//! memory limit, its open-file limit), from PostgreSQL (`max_connections`) and from Prometheus
//! pages (a gauge's `_max`), as the monitor recorded them; a resource without one is named as
//! a runner-up only.

use crate::capacity::Capacity;
use crate::figures::{SegmentAnalysis, StepLoad, WorkUnit};
use crate::resources::{steady_window, MIN_SAMPLES};
use crate::validity::ClientLimit;
use crest_model::monitor::{EventKind, MonitorRecord, MonitorSeries, SourceRecord};
use crest_model::results::Results;
use serde::Serialize;

/// The share of its ceiling at which a resource is the bottleneck.
pub const AT_CEILING: f64 = 0.9;

/// A process throttled in at least this share of its cgroup's periods (percent) is at its CPU
/// quota, by the kernel's own account, whatever share of it the samples show: on a machine
/// whose cores other work fills, a throttled group does not get all of its quota back in the
/// periods between, and read 89.97% of a quarter core it was throttled in 86% of the time.
pub const THROTTLED_AT_QUOTA: f64 = 50.0;
/// Shares of their ceilings this close are a tie, which the kind of ceiling breaks.
const NEAR_TIE: f64 = 0.02;
/// The least share of the host's CPU use that crest and the watched processes must account for
/// for the host's CPU to be the service's bottleneck.
const ELSEWHERE: f64 = 0.5;
/// The share of the requests of a step refused or reset before an answer for the service to be
/// said to refuse connections there.
const REFUSED_SHARE: f64 = 0.01;

/// How much longer than at the lightest load a step's successes may take and still be said to
/// have waited for nothing: queueing behind a worker adds a share of a whole service time (one
/// request more than 4 workers adds a quarter), loopback noise a few percent.
pub const NO_WAIT: f64 = 0.15;

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
    /// What the other watched processes used at the same step (and crest there, from its CPU
    /// per request over the run), so that a reader sees why they are not the answer.
    pub others: Vec<Usage>,
    /// Resources at their ceiling at the knee that were there from the lightest load on (or
    /// with no lighter load to compare): they did not stop the growth at the knee, but the run
    /// may have started past it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pinned: Vec<Usage>,
    /// The host's CPU at its ceiling at the knee, filled mostly by work crest did not watch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_elsewhere: Option<BusyElsewhere>,
}

/// The host's CPU filled by other work than the load: it slowed the service, but the run
/// cannot say it is what limits it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BusyElsewhere {
    /// The host's CPU at the knee, percent of all its cores.
    pub host: Usage,
    /// The host's cores.
    pub cores: f64,
    /// What crest and the watched processes used at the knee, percent of a core (crest's from
    /// its CPU per request over the run).
    pub load_percent: f64,
    /// Whether any process was watched: without one, the service itself, on this machine, is
    /// among the work crest did not count.
    pub watched: bool,
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
        /// What the figures count: a SQL run's transactions, else requests.
        unit: WorkUnit,
        /// The lightest load already served as much as any (within the growth the capacity
        /// findings call saturation): requests queued there too, so its time is service and
        /// wait together, and `concurrency` is only an upper bound. A lighter load would tell.
        at_most: bool,
        /// The best step waited for nothing (its time within [`NO_WAIT`] of the lightest's) and
        /// the next heavier load collapsed: the service was not shown at its limit anywhere, so
        /// `concurrency` is only a lower bound. A load between the two would tell.
        #[serde(skip_serializing_if = "Option::is_none")]
        at_least: Option<Collapsed>,
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

/// Where a run's throughput fell past its best without ever showing its service at a limit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Collapsed {
    /// The load that served the most.
    pub best_at: StepLoad,
    /// The next heavier load tried.
    pub next: StepLoad,
    /// Successful units per second there.
    pub next_per_s: f64,
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
    /// What it used at the lightest load, when that is below the knee.
    pub below: Option<Below>,
    /// For a CPU quota: the share of its periods the process was throttled, percent.
    pub throttled_percent: Option<f64>,
    /// For a process that may run on fewer cores than the machine has: how busy those cores
    /// were, by any process, percent of them.
    pub cores_busy_percent: Option<f64>,
    /// The samples behind `used`.
    pub samples: usize,
}

impl Usage {
    /// At its ceiling: [`AT_CEILING`] of it used; for a CPU quota, throttled in
    /// [`THROTTLED_AT_QUOTA`] of its periods; for a process pinned to some of the machine's
    /// cores, those cores [`AT_CEILING`] busy with it using at least half of them,
    /// since the cores had no more to give it (other work took the rest).
    pub fn full(&self) -> bool {
        self.share.is_some_and(|s| s >= AT_CEILING)
            || self.resource == Resource::CpuQuota && self.throttled_percent.is_some_and(|t| t >= THROTTLED_AT_QUOTA)
            || self.resource == Resource::Cpu
                && self.share.is_some_and(|s| s >= ELSEWHERE)
                && self.cores_busy_percent.is_some_and(|b| b >= AT_CEILING * 100.0)
    }
}

/// The same resource at the lightest load.
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
    /// A Prometheus gauge against its ceiling on the same page (`X_max`, `X_limit`): a
    /// service's own workers, a pool's connections.
    Gauge,
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
            Resource::Gauge => Kind::Concurrency,
        }
    }

    /// Which of two resources at their ceilings explains the knee better: a process's own
    /// ceilings before the machine's, a full pool last (it fills whenever what it waits on is
    /// slow).
    fn rank(self) -> u8 {
        match self {
            Resource::CpuQuota | Resource::Memory | Resource::OpenFiles | Resource::Threads | Resource::Gauge => 0,
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
    // A run of one unnamed level is judged over its whole: "at run" says nothing.
    let at_knee = |k: &SegmentAnalysis| Some(k.load()).filter(|l| !matches!(l, StepLoad::Named(_)) || loaded.len() > 1);
    let m = i.results.monitor.as_ref();
    let judged = knee
        .map(|k| usages(i.results, m, i.steps, &loaded, k))
        .unwrap_or_default();
    let others = |except: Option<&Usage>, at: Option<&SegmentAnalysis>| -> Vec<Usage> {
        let mut o: Vec<Usage> = judged
            .iter()
            .filter(|u| matches!(u.resource, Resource::Cpu | Resource::CpuQuota))
            .filter(|u| except.is_none_or(|e| e.subject != u.subject))
            .cloned()
            .collect();
        // At the step the finding names; a run of one unnamed level names none, and its one
        // step is the run.
        let at = at.filter(|k| at_knee(k).is_some());
        o.extend(own_cpu(i.results, at.and_then(|k| i.requests.get(k.index))));
        o
    };
    if !i.client_bound.is_empty() {
        return Some(Bottleneck {
            kind: Kind::LoadGenerator,
            subject: "crest".into(),
            at: knee.and_then(at_knee),
            figures: Figures::LoadGenerator {
                client: i.client_bound.to_vec(),
            },
            others: others(None, knee),
            pinned: Vec::new(),
            busy_elsewhere: None,
        });
    }
    let knee = match knee {
        Some(k) => k,
        None => {
            // No knee: the run ended while its unit still grew beyond noise, or it cannot tell.
            let top = crate::capacity::still_growing(i.steps, i.capacity)?;
            return Some(Bottleneck {
                kind: Kind::None,
                subject: "service".into(),
                at: Some(top.load()),
                figures: Figures::StillGrowing {
                    highest: top.load(),
                    per_s: top.success_rps,
                    unit: i.capacity.unit,
                },
                others: others(None, Some(top)),
                pinned: Vec::new(),
                busy_elsewhere: None,
            });
        }
    };
    // With several loads, a resource is judged on how it rose from the lightest: one already
    // at its ceiling there (a busy machine's CPU, a pool opened in full at start), or with no
    // lighter load to compare (the run broke at its first step), did not stop the growth at
    // the knee. A run of one load has nothing to compare with, and is judged on its ceiling.
    let rose = |u: &&Usage| {
        loaded.len() == 1
            || u.below
                .as_ref()
                .is_some_and(|b| b.share.is_some_and(|s| s < AT_CEILING))
    };
    // The machine's CPU limits the service only when the load is what fills it: crest and the
    // watched processes used at least half of what the host used. Else other work on the
    // machine filled it (a build beside the test), which is said, not named the bottleneck.
    let cores = i
        .results
        .environment
        .as_ref()
        .map(|e| e.cores as f64)
        .filter(|c| *c > 0.0);
    let load_cpu: f64 = judged
        .iter()
        .filter(|u| matches!(u.resource, Resource::Cpu | Resource::CpuQuota))
        .map(|u| u.used)
        .chain(own_cpu(i.results, i.requests.get(knee.index)).map(|u| u.used))
        .sum();
    let elsewhere =
        |u: &&Usage| u.resource == Resource::HostCpu && cores.is_some_and(|c| load_cpu < ELSEWHERE * u.used * c);
    let busy_elsewhere = judged
        .iter()
        .filter(|u| u.share.is_some_and(|s| s >= AT_CEILING))
        .find(|u| elsewhere(u))
        .map(|u| BusyElsewhere {
            host: u.clone(),
            cores: cores.unwrap_or(0.0),
            load_percent: load_cpu,
            watched: watched_process(i.results.monitor.as_ref()),
        });
    // A service that already served as much at the lightest load, where the resource was below
    // its ceiling, and whose knee failed its extra load, was not stopped by the resource: what
    // filled it there is the failing work (a storm of instant 503s burns CPU), not what capped
    // the answers. It is neither the answer nor pinned. Without failures paying for it, a
    // resource that rose to its ceiling over a flat plateau may be the limit (a CPU-bound
    // service at 86% already at the lightest load), and is judged as any other.
    let at_requests = i.requests.get(knee.index).unwrap_or(knee);
    let late_possible =
        saturated_from_lightest(i.requests) && at_requests.error_rate > crate::capacity::BREAKING_ERROR_RATE;
    let late = |u: &&Usage| late_possible && rose(u);
    let rose = |u: &&Usage| rose(u) && !elsewhere(u) && !late(u);
    let full: Vec<&Usage> = judged
        .iter()
        .filter(|u| u.full() && u.samples >= MIN_SAMPLES && !late(u))
        .collect();
    // The fullest explains the knee; a process's own ceilings win a near tie over a shared one.
    let at_ceiling = full.iter().copied().filter(rose).max_by(|a, b| {
        let (sa, sb) = (a.share.unwrap_or(0.0), b.share.unwrap_or(0.0));
        if (sa - sb).abs() <= NEAR_TIE {
            b.resource.rank().cmp(&a.resource.rank())
        } else {
            sa.total_cmp(&sb)
        }
    });
    let pinned: Vec<Usage> = full
        .iter()
        .filter(|u| !rose(u) && !elsewhere(u))
        .map(|u| (*u).clone())
        .collect();
    if let Some(u) = at_ceiling {
        return Some(Bottleneck {
            kind: u.resource.kind(),
            subject: u.subject.clone(),
            at: at_knee(knee),
            figures: Figures::Resource(u.clone()),
            others: others(Some(u), Some(knee)),
            pinned,
            busy_elsewhere: busy_elsewhere.clone(),
        });
    }
    knee_figures(i, knee, m, others(None, Some(knee)), pinned, busy_elsewhere)
}

/// With no resource at its ceiling, what the knee's own steps say: refused connections (unless
/// a process of the service ended then), or else the service's own concurrency. Nothing when the
/// run has no knee.
fn knee_figures(
    i: &Inputs,
    knee: &SegmentAnalysis,
    m: Option<&MonitorRecord>,
    others: Vec<Usage>,
    pinned: Vec<Usage>,
    busy_elsewhere: Option<BusyElsewhere>,
) -> Option<Bottleneck> {
    // Only a knee says the service stopped scaling; one step at no ceiling says nothing.
    if i.capacity.saturation.is_none() && i.capacity.breaking.is_none() {
        return None;
    }
    let at = i.requests.get(knee.index).unwrap_or(knee);
    // A process of the service that ended during the knee's step refused and reset what came
    // after: that is its death, said as an event, not a limit on connections.
    let died = m.is_some_and(|m| {
        m.events
            .iter()
            .any(|e| e.kind != EventKind::Restarted && e.at_s >= at.start_s && e.at_s <= at.end_s + 1.0)
    });
    if let Some(c) = refusals(i.requests, at).filter(|_| !died) {
        return Some(Bottleneck {
            kind: Kind::Connections,
            subject: "service".into(),
            at: Some(knee.load()),
            figures: c,
            others,
            pinned,
            busy_elsewhere,
        });
    }
    // The request steps count a SQL run's transactions, each once; anything else's requests.
    let counted = match i.capacity.unit {
        WorkUnit::Transactions => WorkUnit::Transactions,
        WorkUnit::Requests | WorkUnit::Iterations => WorkUnit::Requests,
    };
    let c = concurrency(i.requests, watched_process(m), counted)?;
    Some(Bottleneck {
        kind: Kind::Concurrency,
        subject: "service".into(),
        at: Some(knee.load()),
        figures: c,
        others,
        pinned,
        busy_elsewhere,
    })
}

/// Whether the run watched any process (`--monitor-pid`, `--monitor-process`).
fn watched_process(m: Option<&MonitorRecord>) -> bool {
    m.is_some_and(|m| m.sources.iter().any(|s| s.kind == "process"))
}

/// The loaded steps, one per load, in load order.
fn levels(steps: &[SegmentAnalysis]) -> Vec<&SegmentAnalysis> {
    let mut l: Vec<&SegmentAnalysis> = steps.iter().filter(|g| g.requests > 0).collect();
    crate::capacity::one_per_load(&mut l);
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

/// Whose a series is: a process's label, `host`, `postgres`, or a Prometheus series by its key.
fn series_subject(s: &MonitorSeries, source: Option<&SourceRecord>) -> String {
    match s.key.metric.as_str() {
        "host_cpu_percent" => "host".to_string(),
        _ if source.is_some_and(|x| x.kind == "prometheus") => s.key.to_string(),
        m if m.starts_with("pg_") => "postgres".to_string(),
        _ => subject(source, s.key.labels.get("process")),
    }
}

/// Every resource with something to say at `knee`, each with its share at the step below.
fn usages(
    r: &Results,
    m: Option<&MonitorRecord>,
    steps: &[SegmentAnalysis],
    loaded: &[&SegmentAnalysis],
    knee: &SegmentAnalysis,
) -> Vec<Usage> {
    let Some(m) = m else { return Vec::new() };
    // The lightest load, where the service waited for nothing: a resource that stopped the
    // growth rose to its ceiling from there (the step just below the knee may be near it
    // already, as the optimum often is).
    let below = loaded.first().filter(|g| g.load_value() < knee.load_value()).copied();
    let cores = r.environment.as_ref().map(|e| e.cores as f64).filter(|c| *c > 0.0);
    let mut out = Vec::new();
    for s in &m.series {
        let source = m.sources.get(s.source as usize);
        let Some((resource, ceiling, peak)) = judge(s, source, cores) else {
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
        // A series the monitor records beside this one for the same processes, over the
        // knee's steady window.
        let beside = |metric: &str| {
            let t = m
                .series
                .iter()
                .find(|t| t.key.metric == metric && t.source == s.source && t.key.labels == s.key.labels)?;
            let (from, to) = steady_window(knee, steps);
            let v: Vec<f64> = t.values_between(from, to).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let throttled_percent = (resource == Resource::CpuQuota)
            .then(|| beside("process_cpu_throttled_percent"))
            .flatten();
        let cores_busy_percent = (resource == Resource::Cpu)
            .then(|| beside("process_cores_busy_percent"))
            .flatten();
        let subject = series_subject(s, source);
        out.push(Usage {
            resource,
            subject,
            used,
            ceiling,
            share,
            below: below.and_then(|b| {
                at(b).map(|(used, _)| Below {
                    load: b.load(),
                    used,
                    share: ceiling.filter(|c| *c > 0.0).map(|c| used / c),
                })
            }),
            throttled_percent,
            cores_busy_percent,
            samples,
        });
    }
    out.extend(pool(m, steps, knee, below));
    out
}

/// Which resource a series is, its ceiling, and whether it is judged on its peak (levels that
/// fail the moment they are reached) rather than its mean (CPU, which is shared out over time).
fn judge(
    s: &MonitorSeries,
    source: Option<&SourceRecord>,
    host_cores: Option<f64>,
) -> Option<(Resource, Option<f64>, bool)> {
    let limits = source.and_then(|x| x.limits.as_ref());
    if source.is_some_and(|x| x.kind == "prometheus") {
        return s.limit.map(|l| (gauge_resource(&s.key.metric), Some(l), true));
    }
    Some(match s.key.metric.as_str() {
        "process_cpu_percent" => {
            let cores = limits.and_then(|l| l.cores).or(host_cores);
            let quota = limits.and_then(|l| l.cpu_quota_cores);
            match (quota, cores) {
                (Some(q), c) if c.is_none_or(|c| q < c) => (Resource::CpuQuota, Some(q * 100.0), false),
                (_, c) => (Resource::Cpu, s.limit.or(c.map(|c| c * 100.0)), false),
            }
        }
        // A group's resident memory counts each shared page once per process, so the monitor
        // bounds only one process's by its cgroup's limit; a group is judged on its private
        // memory, which it bounds when the group shares one cgroup.
        "process_resident_memory_bytes" => (
            Resource::Memory,
            s.limit.or(limits.and_then(|l| l.address_space_bytes)),
            true,
        ),
        "process_private_memory_bytes" => (Resource::Memory, s.limit, true),
        "process_open_fds" => (Resource::OpenFiles, s.limit.or(limits.and_then(|l| l.open_files)), true),
        "process_threads" => (Resource::Threads, s.limit, true),
        "pg_connections" if s.key.labels.get("state").map(String::as_str) == Some("all") => {
            (Resource::DbConnections, s.limit, true)
        }
        "host_cpu_percent" => (Resource::HostCpu, s.limit.or(Some(100.0)), false),
        _ => return None,
    })
}

/// What a Prometheus gauge with a ceiling counts, by its name.
fn gauge_resource(metric: &str) -> Resource {
    let m = metric.to_ascii_lowercase();
    if m.contains("fds") || m.contains("open_files") {
        Resource::OpenFiles
    } else if m.contains("memory") || m.ends_with("_bytes") {
        Resource::Memory
    } else if m.contains("thread") {
        Resource::Threads
    } else if m.contains("connection") && ["db", "pool", "hikari", "pg", "sql"].iter().any(|w| m.contains(w)) {
        Resource::DbPool
    } else {
        Resource::Gauge
    }
}

/// An application's pool of database connections, busy in full: the connections open did not
/// grow past the knee although the load did, and nearly all of them were in a transaction.
/// Connections that grow with the load (crest's own SQL users, one each) are no pool.
fn pool(
    m: &MonitorRecord,
    steps: &[SegmentAnalysis],
    knee: &SegmentAnalysis,
    below: Option<&SegmentAnalysis>,
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
        below: below.and_then(|b| {
            busy_at(b).map(|(used, open, _)| Below {
                load: b.load(),
                used,
                share: (open > 0.0).then(|| used / open),
            })
        }),
        throttled_percent: None,
        cores_busy_percent: None,
        samples,
    })
}

/// crest's own CPU, percent of a core: at step `at` (a request step), else over the run.
fn own_cpu(r: &Results, at: Option<&SegmentAnalysis>) -> Option<Usage> {
    let c = r.client.as_ref()?;
    let secs = r.active_s();
    let requests: u64 = r.intervals.iter().map(|i| i.requests).sum();
    // crest's CPU is read once, over the run; its work is its requests, so at a step it is its
    // CPU per request times the step's requests per second. The run's average would stand for
    // every step alike, and understate the heaviest, where the answer is judged.
    let per_s = match at {
        Some(g) if requests > 0 => c.cpu_s / requests as f64 * g.throughput_rps,
        _ if secs > 0.0 => c.cpu_s / secs,
        _ => return None,
    };
    Some(Usage {
        resource: Resource::Cpu,
        subject: "crest".into(),
        used: per_s * 100.0,
        ceiling: Some(c.cores.max(1) as f64 * 100.0),
        share: Some(per_s / c.cores.max(1) as f64),
        below: None,
        throttled_percent: None,
        cores_busy_percent: None,
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
    // Some were served there, and a lighter load refused none: a limit on how many, not a
    // service that is not listening.
    if at.requests <= at.failures || (refused as f64) < REFUSED_SHARE * at.requests as f64 {
        return None;
    }
    let clean_at = Some(
        levels(requests)
            .into_iter()
            .rfind(|g| g.load_value() < at.load_value() && refused_of(g) == 0 && g.requests > 0)?
            .load(),
    );
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
fn concurrency(requests: &[SegmentAnalysis], watched: bool, unit: WorkUnit) -> Option<Figures> {
    let l = levels(requests);
    let lightest = l.iter().find(|g| g.requests > g.failures)?;
    let best = l.iter().map(|g| g.success_rps).fold(0.0, f64::max);
    let service_ms = lightest.success_latency_ms.mean;
    if !(best > 0.0 && service_ms > 0.0) {
        return None;
    }
    let exact = best * service_ms / 1000.0;
    let at_most = saturated_from_lightest(requests);
    let at_least = collapsed_past_best(&l, service_ms).filter(|_| !at_most);
    Some(Figures::Concurrency {
        concurrency: exact.round().max(1.0) as u64,
        exact,
        best_rps: best,
        service_ms,
        lightest: lightest.load(),
        watched,
        unit,
        at_most,
        at_least,
    })
}

/// The best of several loads, when it waited for nothing and every heavier load served fewer
/// (beyond the growth the capacity findings call saturation): a spike from 3 users to 60 on a
/// 4-worker service that collapsed into timeouts and 503s. Its best was 3 requests at once,
/// which says the service has at least 3 workers, not that it has 3.
fn collapsed_past_best(l: &[&SegmentAnalysis], service_ms: f64) -> Option<Collapsed> {
    let (i, best) = l
        .iter()
        .enumerate()
        .max_by(|(_, a), (_, b)| a.success_rps.total_cmp(&b.success_rps))?;
    let next = l.get(i + 1)?;
    // Each heavier load fell past the saturation rule and beyond the two steps' noise: a dip
    // of a few percent at a plateau is the limit shown, not a collapse.
    let fell = l[i + 1..].iter().all(|g| {
        g.success_rps * (1.0 + crate::capacity::SATURATION_GROWTH) < best.success_rps
            && best.success_rps - g.success_rps > crate::capacity::noise(best, g)
    });
    let waited = best.success_latency_ms.mean > service_ms * (1.0 + NO_WAIT);
    (fell && !waited).then(|| Collapsed {
        best_at: best.load(),
        next: next.load(),
        next_per_s: next.success_rps,
    })
}

/// Whether the lightest of several loads already served as many successful requests a second
/// as the heavier ones, no more and no less (within the growth the capacity findings call
/// saturation): the service was at its limit there, so what that step measured includes
/// waiting. A heavier load that served fewer (a spike that collapsed into 503s and timeouts)
/// says nothing of the lightest: 3 users of a 4-worker service served the most there without
/// being at its limit. Judged on the request steps, as the concurrency it qualifies is.
fn saturated_from_lightest(requests: &[SegmentAnalysis]) -> bool {
    let l = levels(requests);
    let near = |a: f64, b: f64| a <= b * (1.0 + crate::capacity::SATURATION_GROWTH);
    let Some(lightest) = l.iter().find(|g| g.requests > g.failures) else {
        return false;
    };
    l.len() > 1
        && l.iter()
            .filter(|g| g.load_value() > lightest.load_value())
            .all(|g| near(g.success_rps, lightest.success_rps) && near(lightest.success_rps, g.success_rps))
}

/// How many of a series' last samples a leader is judged on: one sample of CPU is noisy.
const LEADER_SAMPLES: usize = 3;

/// The watched resource nearest its ceiling over the last few samples: what a live page names
/// while the run goes on, before any knee can be judged. `None` when no watched series has a
/// ceiling.
pub fn leader(r: &Results) -> Option<Usage> {
    let m = r.monitor.as_ref()?;
    let cores = r.environment.as_ref().map(|e| e.cores as f64).filter(|c| *c > 0.0);
    let newest = m
        .series
        .iter()
        .filter_map(|s| s.points.last().map(|p| p.0))
        .fold(f64::MIN, f64::max);
    m.series
        .iter()
        .filter_map(|s| {
            let source = m.sources.get(s.source as usize);
            let (resource, ceiling, _) = judge(s, source, cores)?;
            let ceiling = ceiling.filter(|c| *c > 0.0)?;
            let last = &s.points[s.points.len().saturating_sub(LEADER_SAMPLES)..];
            // A series no longer read (its process ended) leads nothing now.
            if last.len() < LEADER_SAMPLES || last[last.len() - 1].0 < newest - 2.0 * m.interval_s.max(0.1) {
                return None;
            }
            let used = last.iter().map(|p| p.1).sum::<f64>() / last.len() as f64;
            let subject = series_subject(s, source);
            Some(Usage {
                resource,
                subject,
                used,
                ceiling: Some(ceiling),
                share: Some(used / ceiling),
                below: None,
                throttled_percent: None,
                cores_busy_percent: None,
                samples: last.len(),
            })
        })
        .max_by(|a, b| a.share.unwrap_or(0.0).total_cmp(&b.share.unwrap_or(0.0)))
}
