//! `crest validate FILE`: checks a scenario file and describes what it would run.

use crate::output;
use anyhow::Result;

/// A scenario's warnings, on stderr, located as its errors are.
pub fn warn(file: &str, warnings: &[crest_scenario::Problem]) {
    for w in warnings {
        let one = crest_scenario::ScenarioError {
            file: file.to_string(),
            problems: vec![w.clone()],
        };
        eprintln!("warning: {one}");
    }
}

/// Checks a scenario file and describes what it would run.
pub fn command(file: &std::path::Path) -> Result<u8> {
    use std::fmt::Write;
    let s = crest_scenario::load(file)?;
    warn(&file.display().to_string(), &s.warnings);
    let mut out = String::new();
    let flows: Vec<String> = s
        .flow
        .flows
        .iter()
        .map(|f| format!("{} (weight {})", f.name, f.weight))
        .collect();
    let _ = writeln!(out, "{}: valid", file.display());
    let _ = writeln!(out, "  flows: {}", flows.join(", "));
    let _ = writeln!(out, "  requests: {}", s.plan.names().join(", "));
    let load = match &s.plan.load() {
        crest_model::plan::LoadModel::Closed { users, iterations } => crest_report::fmt::words::Load::Closed {
            users: users.max(),
            iterations: *iterations,
        },
        crest_model::plan::LoadModel::Open {
            rate,
            max_in_flight,
            on_cap,
        } => crest_report::fmt::words::Load::Open {
            rate: rate.max(),
            max_in_flight: *max_in_flight,
            on_cap: *on_cap,
        },
    };
    // A scenario's arrivals are its flow's iterations.
    let load = crest_report::fmt::words::load(load, crest_model::reason::WorkUnit::Iterations);
    let _ = writeln!(out, "  load: {load}");
    let segments: Vec<String> = s
        .plan
        .segments()
        .iter()
        .map(|g| {
            format!(
                "{} (from {} s)",
                crest_report::fmt::words::step_kind(&g.kind),
                g.start.as_secs()
            )
        })
        .collect();
    let _ = writeln!(out, "  steps: {}", segments.join(", "));
    if let Some(d) = s.plan.stop().duration {
        let _ = writeln!(out, "  duration: {}", humantime::format_duration(d));
    }
    for t in s.plan.thresholds() {
        let _ = writeln!(out, "  threshold: {t}");
    }
    for c in s.plan.stop_when() {
        let _ = writeln!(out, "  stop when: {c}");
    }
    let m = &s.plan.monitor();
    let mut watched: Vec<String> = Vec::new();
    if m.host {
        watched.push("this machine".into());
    }
    watched.extend(m.processes.iter().map(|p| format!("process {}", p.label)));
    watched.extend(
        m.prometheus
            .iter()
            .map(|p| format!("Prometheus {}", crest_model::redact::url(&p.url))),
    );
    watched.extend(
        m.postgres
            .iter()
            .map(|p| format!("PostgreSQL {}", crest_model::redact::url(&p.url))),
    );
    let _ = writeln!(
        out,
        "  monitor: {} every {}",
        watched.join(", "),
        humantime::format_duration(m.interval)
    );
    output::stdout(&out);
    Ok(0)
}
