//! A study across runs (the points of a sweep) as Markdown, HTML and JSON. Every cell is put in
//! words here, once, so the formats show the same figures.

use crate::fmt::{self, words};
use crest_analysis::study::Study;
use minijinja::context;
use serde::Serialize;

/// The study as the templates show it.
#[derive(Serialize)]
struct View {
    title: String,
    params: Vec<String>,
    names: Vec<String>,
    rows: Vec<Row>,
    findings: Vec<String>,
    users: bool,
    /// Whether any point ran a setup command: the "setup" column.
    setup: bool,
    /// Whether any point names a bottleneck.
    bottleneck: bool,
    /// Watched processes: two columns each.
    processes: Vec<String>,
}

#[derive(Serialize)]
struct Row {
    label: String,
    /// The point's own run directory, relative to the study's.
    dir: String,
    values: Vec<String>,
    requests: String,
    success: String,
    rps: String,
    p50: String,
    p95: String,
    mean: String,
    ratio: String,
    /// Per request name: `mean / p95 ms` and the mean response size.
    per_name: Vec<String>,
    /// When every user was done, for runs with fixed iterations.
    done: String,
    /// The setup command before the point: `12.3 s`, `12.3 s, exit 1`.
    setup: String,
    /// What limited the point, in a few words.
    bottleneck: String,
    /// Per watched process: mean CPU in millicores, and peak memory (private / resident).
    processes: Vec<ProcessCells>,
}

#[derive(Serialize)]
struct ProcessCells {
    cpu: String,
    memory: String,
}

fn view(s: &Study) -> View {
    let title = if s.params.is_empty() {
        "crest study".to_string()
    } else {
        format!("crest study: {}", s.params.join(" x "))
    };
    let rows = s
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| Row {
            label: p.label.clone(),
            dir: point_dir(i),
            values: p.values.clone(),
            requests: fmt::int(p.requests),
            success: fmt::pct(p.success_rate),
            rps: fmt::num(p.success_rps),
            p50: fmt::ms(p.latency_ms.p50),
            p95: fmt::ms(p.latency_ms.p95),
            mean: fmt::ms(p.latency_ms.mean),
            ratio: match (p.baseline, p.ratio) {
                (true, _) => "1.00".to_string(),
                (false, Some(r)) => format!("{r:.2}"),
                (false, None) => "-".to_string(),
            },
            per_name: p
                .per_name
                .iter()
                .map(|n| match n {
                    Some(n) if n.requests > 0 => format!(
                        "{} / {} ms, {}",
                        fmt::ms(n.latency_ms.mean),
                        fmt::ms(n.latency_ms.p95),
                        fmt::bytes(n.mean_bytes.round() as u64)
                    ),
                    _ => "-".to_string(),
                })
                .collect(),
            done: p
                .users
                .as_ref()
                .map_or_else(|| "-".to_string(), |u| format!("{:.2} s", u.all_done_s)),
            setup: p.setup.as_ref().map_or_else(|| "-".to_string(), words::setup_cell),
            bottleneck: p
                .bottleneck
                .as_ref()
                .map_or_else(|| "-".to_string(), words::bottleneck_cell),
            processes: p
                .processes
                .iter()
                .map(|f| match f {
                    Some(f) => ProcessCells {
                        cpu: words::process_cpu_cell(f),
                        memory: words::process_memory_cell(f),
                    },
                    None => ProcessCells {
                        cpu: "-".to_string(),
                        memory: "-".to_string(),
                    },
                })
                .collect(),
        })
        .collect();
    View {
        title,
        params: s.params.clone(),
        names: s.names.clone(),
        rows,
        findings: s.findings.iter().map(words::study_finding).collect(),
        users: s.points.iter().any(|p| p.users.is_some()),
        setup: s.points.iter().any(|p| p.setup.is_some()),
        bottleneck: s.points.iter().any(|p| p.bottleneck.is_some()),
        processes: s.processes.clone(),
    }
}

/// The run directory of the study's point `k` (from 0), inside the study's directory.
pub fn point_dir(k: usize) -> String {
    format!("point-{:03}", k + 1)
}

/// The study as Markdown.
pub fn markdown(s: &Study) -> Result<String, minijinja::Error> {
    crate::view::templates()?
        .get_template("study.md.j2")?
        .render(context! { s => view(s) })
}

/// The study as an HTML page.
pub fn html(s: &Study) -> Result<String, minijinja::Error> {
    crate::view::templates()?
        .get_template("study.html.j2")?
        .render(context! { s => view(s) })
}

/// The study as JSON: the typed figures, with each finding in words beside its figures.
pub fn json(s: &Study) -> serde_json::Result<String> {
    #[derive(Serialize)]
    struct Out<'a> {
        #[serde(flatten)]
        study: &'a Study,
        findings_text: Vec<String>,
    }
    serde_json::to_string_pretty(&Out {
        study: s,
        findings_text: s.findings.iter().map(words::study_finding).collect(),
    })
    .map(|j| j + "\n")
}
