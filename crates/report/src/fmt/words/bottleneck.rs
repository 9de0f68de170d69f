//! Why the service saturates, what happened to its processes, and what to give them, as
//! sentences and as a Kubernetes `resources:` block.

use super::*;
use crest_analysis::bottleneck::{Below, Bottleneck, BusyElsewhere, Figures, Resource, Usage, AT_CEILING};
use crest_analysis::events::ProcessEvent;
use crest_analysis::sizing::{NoSizing, NoSizingWhy, Sizing};
use crest_model::monitor::EventKind;

/// A resource's use in its unit: CPU in percent of one core, memory in bytes, the rest counted.
fn used(r: Resource, v: f64) -> String {
    match r {
        Resource::Cpu | Resource::CpuQuota if v >= 100.0 => format!("{:.2} cores", v / 100.0),
        Resource::Cpu | Resource::CpuQuota => format!("{v:.1}% of a core"),
        Resource::HostCpu => format!("{v:.1}% of all its cores"),
        Resource::Memory => value(Unit::Bytes, v),
        Resource::OpenFiles | Resource::Threads | Resource::DbConnections | Resource::DbPool => value(Unit::Count, v),
        Resource::Gauge => value(Unit::Number, v),
    }
}

/// The ceiling a resource was judged against.
fn ceiling(r: Resource, c: f64) -> String {
    match r {
        Resource::Cpu => format!("the {} it may run on", cores(c / 100.0)),
        Resource::CpuQuota => format!("its CPU quota of {}", cores(c / 100.0)),
        Resource::HostCpu => "all of them".into(),
        Resource::Memory => format!("its limit of {}", value(Unit::Bytes, c)),
        Resource::OpenFiles => format!("its limit of {} open files", value(Unit::Count, c)),
        Resource::Threads => format!("its limit of {} threads", value(Unit::Count, c)),
        Resource::DbConnections => format!("max_connections {}", value(Unit::Count, c)),
        Resource::DbPool => format!("{} open", value(Unit::Count, c)),
        Resource::Gauge => format!("its ceiling of {} on the same page", value(Unit::Number, c)),
    }
}

fn cores(c: f64) -> String {
    if (c - c.round()).abs() < 1e-9 {
        count(c.round() as u64, "core")
    } else {
        format!("{} cores", value(Unit::Number, c))
    }
}

/// What a resource is called in a sentence about it.
fn resource_of(r: Resource, subject: &str) -> String {
    match r {
        Resource::Cpu | Resource::CpuQuota => format!("the CPU of {subject}"),
        Resource::HostCpu => "the host's CPU".into(),
        Resource::Memory => format!("the memory of {subject}"),
        Resource::OpenFiles => format!("the open files of {subject}"),
        Resource::Threads => format!("the threads of {subject}"),
        Resource::DbConnections => "PostgreSQL's connections".into(),
        Resource::DbPool if subject == "postgres" => "the application's pool of PostgreSQL connections".into(),
        Resource::DbPool => format!("the pool {subject}"),
        Resource::Gauge => format!("the service's {subject}"),
    }
}

/// `97.5% of a core against the 1 core it may run on (98% of it)`.
fn against(u: &Usage) -> String {
    let verb = match u.resource {
        Resource::DbPool => "busy of",
        Resource::Memory | Resource::OpenFiles | Resource::Threads | Resource::DbConnections | Resource::Gauge => {
            "at peak, against"
        }
        _ => "against",
    };
    match (u.ceiling, u.share) {
        _ if u.resource == Resource::HostCpu => used(u.resource, u.used),
        (Some(c), Some(s)) => format!(
            "{} {verb} {} ({:.0}% of it)",
            used(u.resource, u.used),
            ceiling(u.resource, c),
            s * 100.0
        ),
        _ => used(u.resource, u.used),
    }
}

fn below(u: &Usage, b: &Below) -> String {
    let share = b.share.map(|s| format!(" ({:.0}%)", s * 100.0)).unwrap_or_default();
    format!(
        "at the lightest load, {}, it used {}{share}",
        step(&b.load),
        used(u.resource, b.used)
    )
}

/// What the other processes used beside the bottleneck: `target used 4.1% of a core, crest 12.0%`.
fn others(o: &[Usage], at_step: bool) -> String {
    if o.is_empty() {
        return String::new();
    }
    let each: Vec<String> = o
        .iter()
        .map(|u| {
            let over = match (u.subject == "crest", at_step) {
                (true, true) => " there (its CPU per request over the run at that rate)",
                (true, false) => " over the run",
                _ => "",
            };
            format!("{} {}{over}", u.subject, used(u.resource, u.used))
        })
        .collect();
    format!(" Beside it: {}.", each.join(", "))
}

/// The bottleneck as one to three sentences, with the figures it rests on.
pub fn bottleneck(b: &Bottleneck) -> String {
    let at = b.at.as_ref().map(|l| format!(" at {}", step(l))).unwrap_or_default();
    let main = match &b.figures {
        Figures::Resource(u) => {
            let mut s = format!(
                "{} is the bottleneck: {at_}it used {}",
                capitalise(&resource_of(u.resource, &b.subject)),
                against(u),
                at_ = b.at.as_ref().map(|l| format!("at {} ", step(l))).unwrap_or_default(),
            );
            // Short of the share that marks a ceiling, the kernel's own account says it was
            // held: throttled by its quota, or its cores full with other work beside it.
            let short = u.share.is_some_and(|x| x < AT_CEILING);
            if !short {
                s.push_str(&format!(", past the {:.0}% that marks a ceiling", AT_CEILING * 100.0));
            }
            if let Some(t) = u.throttled_percent {
                s.push_str(&format!(", and was throttled in {t:.1}% of its CPU periods"));
                if short {
                    s.push_str(" (the kernel held it to its quota)");
                }
            }
            if let Some(busy) = u.cores_busy_percent {
                // The ceiling already named the cores it may run on.
                let cores = match u.ceiling.map(|c| (c / 100.0).round() as u64) {
                    Some(1) => "that core",
                    _ => "those cores",
                };
                s.push_str(&format!(", with {cores} {busy:.1}% busy in all"));
                if short {
                    s.push_str(" (other work took the rest)");
                }
            }
            match &u.below {
                Some(x) => s.push_str(&format!("; {}.", below(u, x))),
                None => s.push('.'),
            }
            s
        }
        Figures::LoadGenerator { client } => format!(
            "crest itself limited the run{at}, not the service: {}.",
            client.iter().map(client_limit).collect::<Vec<_>>().join("; ")
        ),
        Figures::Connections {
            refused,
            requests,
            clean_at,
            in_hand,
        } => {
            let clean = clean_at
                .as_ref()
                .map(|l| format!(", none at {}", step(l)))
                .unwrap_or_default();
            format!(
                "The service refuses connections past a number of them: {at_}{} of {} were refused or reset before an answer ({}){clean}. It served {} requests at once there (successful requests per second x their mean time), about the number of connections it accepts.",
                crate::fmt::int(*refused),
                count(*requests, "request"),
                crate::fmt::pct(*refused as f64 / (*requests).max(1) as f64),
                num(*in_hand),
                at_ = b.at.as_ref().map(|l| format!("at {}, ", step(l))).unwrap_or_default(),
            )
        }
        Figures::Concurrency {
            concurrency,
            exact,
            best_rps,
            service_ms,
            lightest,
            watched,
            unit,
            at_most,
            at_least,
        } => {
            let each = match unit {
                WorkUnit::Transactions => "a transaction",
                _ => "a request",
            };
            let bound = if *at_most {
                format!(
                    "; {} already served as much as any load, so its time includes waiting and the workers may be fewer and quicker: a lighter load would tell",
                    step(lightest)
                )
            } else if let Some(c) = at_least {
                format!(
                    "; {} waited for nothing, and the next load, {}, served {} {}: the service was not shown at its limit, and a load between the two would tell how many more it serves",
                    step(&c.best_at),
                    step(&c.next),
                    num(c.next_per_s),
                    unit_rate(*unit),
                )
            } else {
                String::new()
            };
            let figures = format!(
                "behaves like {}{} of {} ms (its best {} {} x {} ms {each} at {} = {} {} at once{bound})",
                bound_word(*at_most, at_least.is_some()),
                workers(*concurrency, *exact),
                crate::fmt::ms(*service_ms),
                num(*best_rps),
                unit_rate(*unit),
                crate::fmt::ms(*service_ms),
                step(lightest),
                num(*exact),
                unit_plural(*unit),
            );
            if *watched && !b.pinned.is_empty() {
                format!("The service stops scaling{at} with no watched resource rising to its ceiling: it {figures}, a worker, pool or connection limit of its own.")
            } else if *watched {
                format!("The service stops scaling{at} with no watched resource at its ceiling: it {figures}, a worker, pool or connection limit of its own.")
            } else {
                format!("The service stops scaling{at} and {figures}: a worker, pool or connection limit of its own, or its CPU. No process of the service was watched, and a CPU-bound service reads the same (one core serves like one worker); watch it (--monitor-pid, --monitor-process) to tell them apart.")
            }
        }
        Figures::StillGrowing { highest, per_s, unit } => format!(
            "Nothing limited the service up to {}: its {} still grew there ({} {}).",
            step(highest),
            unit_rate(*unit),
            num(*per_s),
            unit_rate(*unit)
        ),
    };
    main + &pinned(&b.pinned) + &elsewhere(b.busy_elsewhere.as_ref()) + &others(&b.others, b.at.is_some())
}

/// The host's CPU filled by other work than the load, as a sentence after the answer.
fn elsewhere(e: Option<&BusyElsewhere>) -> String {
    let Some(e) = e else { return String::new() };
    let (who, what) = if e.watched {
        (
            "crest and the watched processes",
            "other work on the machine filled it, and may have slowed the service",
        )
    } else {
        (
            "crest",
            "no process was watched, so what filled the rest is not known: the service itself, if it runs here (watch it with --monitor-pid or --monitor-process), or other work on the machine, which may have slowed it",
        )
    };
    format!(
        " The host's CPU was at {:.1}% of its {} there, but {who} used {:.2} of them: {what}.",
        e.host.used,
        cores(e.cores),
        e.load_percent / 100.0
    )
}

/// Resources at their ceiling from the lightest load on: said apart, as the run may have
/// started past its knee.
fn pinned(p: &[Usage]) -> String {
    if p.is_empty() {
        return String::new();
    }
    let each: Vec<String> = p
        .iter()
        .map(|u| format!("{} ({})", resource_of(u.resource, &u.subject), against(u)))
        .collect();
    format!(
        " At its ceiling from the lightest load on, so not what stopped the growth there (the run may have started past its knee): {}.",
        each.join("; ")
    )
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// A process that exited, was OOM-killed or restarted, as a sentence.
pub fn process_event(e: &ProcessEvent) -> String {
    let pid = e.pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
    match e.kind {
        EventKind::Exited => format!("{}{pid} exited at {:.1} s.", e.subject, e.at_s),
        EventKind::OomKilled => {
            let limit = e
                .memory_limit_bytes
                .map(|l| format!(" at its cgroup's memory limit of {}", value(Unit::Bytes, l)))
                .unwrap_or_default();
            let kills = e
                .oom_kills
                .map(|k| format!(" ({} counted)", count(k, "OOM kill")))
                .unwrap_or_default();
            format!(
                "{}{pid} was killed for memory by the kernel's OOM killer at {:.1} s{limit}{kills}.",
                e.subject, e.at_s
            )
        }
        EventKind::Restarted => {
            let new = e.new_pid.map(|p| format!(" as pid {p}")).unwrap_or_default();
            format!(
                "{} came back at {:.1} s{new}{pid_was}.",
                e.subject,
                e.at_s,
                pid_was = e.pid.map(|p| format!(", after pid {p}")).unwrap_or_default()
            )
        }
    }
}

/// What a sizing rests on, as a sentence.
pub fn sizing_basis(s: &Sizing) -> String {
    let b = &s.basis;
    // A run without steps is "the run", not a step called "run".
    let step = |l: &StepLoad| match l {
        StepLoad::Named(StepKind::Run) => "the run".to_string(),
        l => step(l),
    };
    let at = if b.optimum {
        format!("the optimum, {}", step(&b.request_at))
    } else {
        step(&b.request_at)
    };
    let private = b
        .private_peak_bytes
        .filter(|_| !b.memory_of_group)
        .map(|p| format!(", private {}", value(Unit::Bytes, p)))
        .unwrap_or_default();
    let leak = if b.leaking {
        " Its memory grew under steady load: any limit will be reached in time."
    } else {
        ""
    };
    let capped = if b.capped {
        " Its CPU was at its ceiling there, so it may need more than it could use."
    } else {
        ""
    };
    let memory = if b.memory_of_group {
        "private memory (its processes share the rest)"
    } else {
        "resident memory"
    };
    let refusing = b
        .limit_failed
        .map(|e| {
            format!(
                " At {}, {} of requests failed: part of that CPU is the cost of refusing them, which a lower limit would throttle.",
                step(&b.limit_at),
                crate::fmt::pct(e)
            )
        })
        .unwrap_or_default();
    format!(
        "{}: requests from {at} ({:.1}% of a core, {memory} up to {}, of {}); limits from {} ({:.1}% of a core, peak {}{private}) with {:.0}% headroom on CPU and {:.0}% on memory.{refusing}{capped}{leak}",
        s.subject,
        b.cpu_at_request_percent,
        value(Unit::Bytes, b.resident_at_request_bytes),
        count(b.samples as u64, "sample"),
        step(&b.limit_at),
        b.cpu_at_limit_percent,
        value(Unit::Bytes, b.resident_peak_bytes),
        b.cpu_headroom * 100.0,
        b.memory_headroom * 100.0
    )
}

/// Why a process is not sized, as a sentence.
pub fn no_sizing(n: &NoSizing) -> String {
    match &n.why {
        NoSizingWhy::TooFewSamples { samples, needed } => format!(
            "{} is not sized: {} at the load its requests would come from, of the {needed} needed.",
            n.subject,
            count(*samples as u64, "sample")
        ),
        NoSizingWhy::NotRead => format!(
            "{} is not sized: its CPU was never read (that takes two samples of it while it runs).",
            n.subject
        ),
        NoSizingWhy::NoLoad => format!("{} is not sized: no step carried load.", n.subject),
    }
}

/// The `resources:` block of a sizing, as YAML to paste into a container's spec, written from
/// the Kubernetes object itself so that it is one `kubectl` reads.
pub fn resources_yaml(s: &Sizing) -> String {
    use k8s_openapi::api::core::v1::ResourceRequirements;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    let pair = |cpu: u64, mib: u64| {
        [
            ("cpu".to_string(), Quantity(format!("{cpu}m"))),
            ("memory".to_string(), Quantity(format!("{mib}Mi"))),
        ]
        .into_iter()
        .collect()
    };
    let block = std::collections::BTreeMap::from([(
        "resources",
        ResourceRequirements {
            requests: Some(pair(s.cpu_request_millicores, s.memory_request_mib)),
            limits: Some(pair(s.cpu_limit_millicores, s.memory_limit_mib)),
            ..Default::default()
        },
    )]);
    let yaml = serde_saphyr::to_string(&block).unwrap_or_default();
    format!("# {}\n{yaml}", s.subject)
}

/// The bottleneck in a table cell: `CPU of postgres, 98% of 1 core`, `8 workers of 10.2 ms`.
pub fn bottleneck_cell(b: &Bottleneck) -> String {
    match &b.figures {
        Figures::Resource(u) => match (u.ceiling, u.share) {
            (Some(c), Some(s)) if u.resource != Resource::HostCpu => format!(
                "{}, {:.0}% of {}",
                resource_of(u.resource, &b.subject),
                s * 100.0,
                ceiling(u.resource, c)
            ),
            _ => format!("{}, {}", resource_of(u.resource, &b.subject), used(u.resource, u.used)),
        },
        Figures::LoadGenerator { .. } => "crest itself".into(),
        Figures::Connections { refused, requests, .. } => format!(
            "connections refused, {}",
            crate::fmt::pct(*refused as f64 / (*requests).max(1) as f64)
        ),
        Figures::Concurrency {
            concurrency,
            exact,
            service_ms,
            at_most,
            at_least,
            ..
        } => format!(
            "{}{} of {} ms",
            bound_word(*at_most, at_least.is_some()),
            workers(*concurrency, *exact),
            crate::fmt::ms(*service_ms)
        ),
        Figures::StillGrowing { .. } => "none yet".into(),
    }
}

/// A count of workers from Little's law: `4 workers`, or `4 to 5 workers` when the figure lies
/// near the middle of two (4.5 requests at once), where rounding would pick one by noise.
fn workers(rounded: u64, exact: f64) -> String {
    let frac = exact - exact.floor();
    if exact >= 1.0 && (0.3..=0.7).contains(&frac) {
        format!("{} to {} workers", exact.floor() as u64, exact.ceil() as u64)
    } else {
        count(rounded, "worker")
    }
}

/// Why a run names no bottleneck, where its report has a place for one.
pub fn no_bottleneck(s: &crest_analysis::summary::Summary) -> String {
    let mut loads: Vec<f64> = s
        .segments
        .iter()
        .filter(|g| g.requests > 0)
        .filter_map(|g| g.users.map(|u| u as f64).or(g.rate))
        .collect();
    loads.sort_by(f64::total_cmp);
    loads.dedup();
    let watched = s.resources.iter().any(|r| r.key.starts_with("process_"));
    let watch = if watched {
        ""
    } else {
        " No process of the service was watched (--monitor-pid, --monitor-process), so none of its resources could be."
    };
    if loads.len() < 2 {
        format!(
            "No bottleneck is named: a run of one load names one only when a watched resource reached its ceiling, and none did.{watch} Step the load (-c 2,4,8,16, or rate stages) to see where it stops scaling and why."
        )
    } else if let Some(l) = &s.answers.limit {
        format!(
            "No bottleneck is named: the service stops scaling at {}, but no watched resource reached its ceiling, and its own concurrency cannot be measured (it needs successes at the lightest load).{watch}",
            l.users.map_or_else(|| l.rate.map_or_else(|| "its limit".to_string(), rate), |u| count(u, "user"))
        )
    } else {
        format!(
            "No bottleneck is named: no step shows the service stopping to scale (no saturation and no breaking point), and no watched resource reached its ceiling.{watch}"
        )
    }
}

/// How a count of workers is bounded: "at most " when the lightest load already waited,
/// "at least " when no load showed the service at its limit.
fn bound_word(at_most: bool, at_least: bool) -> &'static str {
    match (at_most, at_least) {
        (true, _) => "at most ",
        (false, true) => "at least ",
        (false, false) => "",
    }
}

/// A sizing in a table cell: `CPU 170m / 210m, memory 32Mi / 48Mi`.
pub fn sizing_cell(z: &Sizing) -> String {
    format!(
        "CPU {}m / {}m, memory {}Mi / {}Mi",
        z.cpu_request_millicores, z.cpu_limit_millicores, z.memory_request_mib, z.memory_limit_mib
    )
}

/// A process event as a chart labels it: `target OOM-killed`.
pub fn event_label(e: &ProcessEvent) -> String {
    let what = match e.kind {
        EventKind::Exited => "exited",
        EventKind::OomKilled => "OOM-killed",
        EventKind::Restarted => "restarted",
    };
    format!("{} {what}", e.subject)
}

/// The resource nearest its ceiling now, for a run going on: `Nearest its ceiling now: the CPU
/// of postgres, 93.1% of a core against the 1 core it may run on (93% of it).`
pub fn leader(u: &Usage) -> String {
    format!(
        "Nearest its ceiling now: {}, {} over the last {}.",
        resource_of(u.resource, &u.subject),
        against(u),
        count(u.samples as u64, "sample")
    )
}
